import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The file descriptors a message's `h` arguments carried, duplicated as they were read (close-on-exec from the start),
/// so they outlive the message, which closes its own. A ``DBusValue/unixFD(_:)`` read from the message is an index
/// here.
///
/// Whatever is not taken with ``take(_:)`` is closed when this is released: a message refused halfway through (an fd
/// in a userInfo, a limit passed) leaks nothing.
public final class DBusFileDescriptors: Sendable {
    private let descriptors: Mutex<[Int32?]>

    /// Takes ownership of `descriptors`.
    public init(_ descriptors: [Int32] = []) {
        self.descriptors = Mutex(descriptors.map(Optional.some))
    }

    /// How many the message carried.
    public var count: Int { descriptors.withLock { $0.count } }

    /// The descriptor at `index`, now the caller's to close; nil when there is none or it was taken already.
    public func take(_ index: UInt32) -> Int32? {
        descriptors.withLock { descriptors in
            guard Int(index) < descriptors.count else { return nil }
            defer { descriptors[Int(index)] = nil }
            return descriptors[Int(index)]
        }
    }

    /// Adds one, returning its index.
    package func append(_ descriptor: Int32) -> UInt32 {
        descriptors.withLock { descriptors in
            descriptors.append(descriptor)
            return UInt32(descriptors.count - 1)
        }
    }

    deinit {
        descriptors.withLock { descriptors in
            for case let descriptor? in descriptors { close(descriptor) }
        }
    }
}
