import CSystemd

#if canImport(Glibc)
    import Glibc
#endif

/// Connecting to a session bus through sd-bus, for the adapters that run on a ``SessionBusThread``.
package enum SessionBus {
    /// A started connection to the bus at `address` (the caller closes it with `sd_bus_flush_close_unref`); libsystemd
    /// is loaded first, if it was not.
    /// - Throws: ``NotificationBusError/Code/busUnavailable`` when libsystemd cannot be loaded (saying why, ending with
    ///   what `purpose` needs it for), or the connection cannot be made or started.
    package static func open(_ address: String, purpose: String = "desktop notifications") throws(NotificationBusError) -> OpaquePointer {
        if let why = NotificationServer.libraryUnavailable(purpose: purpose) { throw NotificationBusError(.busUnavailable, why) }
        var opened: OpaquePointer?
        var result = baton_sd_bus_new(&opened)
        guard result >= 0, let opened else { throw error("cannot make a bus connection", result) }
        result = baton_sd_bus_set_address(opened, address)
        if result >= 0 { result = baton_sd_bus_set_bus_client(opened, 1) }
        if result >= 0 { result = baton_sd_bus_start(opened) }
        guard result >= 0 else {
            baton_sd_bus_flush_close_unref(opened)
            throw error("cannot connect to the session bus at \(address)", result)
        }
        return opened
    }

    package static func error(_ what: String, _ result: Int32) -> NotificationBusError {
        NotificationBusError(.busUnavailable, "\(what): \(String(cString: strerror(-result)))")
    }

    /// Starts a detached thread named `name` running `body` (never on Swift's cooperative pool: sd-bus blocks).
    /// - Throws: ``NotificationBusError/Code/busUnavailable`` when no thread can be started.
    static func startThread(named name: String, _ body: @escaping @Sendable () -> Void) throws(NotificationBusError) {
        let box = Unmanaged.passRetained(ThreadBody(run: { nameThisThread(name); body() })).toOpaque()
        var thread = pthread_t()
        let result = pthread_create(
            &thread,
            nil,
            { argument in
                guard let argument else { return nil }
                Unmanaged<ThreadBody>.fromOpaque(argument).takeRetainedValue().run()
                return nil
            },
            box
        )
        guard result == 0 else {
            Unmanaged<ThreadBody>.fromOpaque(box).release()
            throw NotificationBusError(.busUnavailable, "cannot start a session bus thread: \(String(cString: strerror(result)))")
        }
        pthread_detach(thread)
    }

    /// What a thread runs, passed through `pthread_create`'s one pointer.
    private final class ThreadBody: Sendable {
        let run: @Sendable () -> Void
        init(run: @escaping @Sendable () -> Void) { self.run = run }
    }

    /// Names the calling thread, as `top -H` and `/proc/PID/task/*/comm` show it (`pthread_setname_np` needs
    /// `_GNU_SOURCE`, which Swift's Glibc module does not define; the kernel takes the name from this file too).
    static func nameThisThread(_ name: String) {
        let descriptor = Glibc.open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        _ = name.withCString { write(descriptor, $0, strlen($0)) }
        close(descriptor)
    }
}
