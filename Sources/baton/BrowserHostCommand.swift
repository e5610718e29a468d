import ArgumentParser
import Baton
import BatonAgent
import BatonCore
import BatonProtocol
import Foundation

struct BrowserHostCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "browser-host",
        abstract: "The browser extension's native messaging host (the browser starts it).",
        discussion: """
            Not for running by hand: Chromium, Chrome and Firefox start it for the Baton extension through the host \
            manifest `baton browser install` writes, and talk to it on standard input and output (a 4-byte length, \
            then JSON). It connects to this device's agent as the built-in browser app org.baton.browser and makes \
            the focused tab of the focused window the current activity: updated on tab switch and navigation, \
            resigned when no browser window has focus or the browser quits. Private windows and pages that are not \
            http or https are never offered. A page continued here from another device opens as a new tab in the \
            running browser. It logs to standard error (the browser's log), never to standard output.
            """
    )

    @OptionGroup var state: StateOptions

    @Argument(parsing: .allUnrecognized, help: ArgumentHelp("What the browser passes (the extension's origin, ...): ignored.", visibility: .hidden))
    var browserArguments: [String] = []

    func run() async throws {
        let status = await BrowserHost(socketPath: BrowserPage.socketPath(for: state)).run()
        if status != 0 { throw ExitCode(status) }
    }
}

/// `baton browser-host`'s I/O around ``BrowserFocus``: standard input read on a thread of its own (never the
/// cooperative pool's), the focus state machine deciding, a ``BrowserPage`` publishing (issue 14).
@MainActor
final class BrowserHost {
    let page: BrowserPage
    var focus = BrowserFocus()
    var reader = NativeMessageReader()
    let pages = ContinuedPages(open: BrowserHost.open)

    init(socketPath: String) {
        page = BrowserPage(socketPath: socketPath, log: BrowserHost.log)
    }

    nonisolated static func log(_ line: String) {
        FileHandle.standardError.write(Data("baton browser-host: \(line)\n".utf8))
    }

    /// Serves the browser until its input ends; 0 then, 1 when the input broke the protocol.
    func run() async -> Int32 {
        // The browser closing our output must not kill us before we resign.
        signal(SIGPIPE, SIG_IGN)
        page.application.delegate = pages
        let input = Self.standardInput()
        let keeper = Task { @MainActor [page] in
            while !Task.isCancelled {
                _ = await page.reconnect()
                try? await Task.sleep(for: .seconds(1))
            }
        }
        // A browser shutting down may end its hosts with SIGTERM rather than closing their input: resign first.
        let stop = StopSignals()
        let watcher = Task { @MainActor [self] in
            while !Task.isCancelled {
                if let number = stop.signal {
                    perform(focus.ended())
                    page.close()
                    Self.log("stopped by signal \(number); exiting")
                    exit(0)
                }
                try? await Task.sleep(for: .milliseconds(100))
            }
        }
        defer { watcher.cancel() }
        defer { keeper.cancel() }
        var status: Int32 = 0
        reading: for await chunk in input {
            reader.append(chunk)
            while true {
                let body: Data?
                do {
                    body = try reader.next()
                } catch let error as BatonProtocolError {
                    // A length that cannot be right: nothing after it can be trusted.
                    perform(focus.unreadable(error))
                    status = 1
                    break reading
                } catch {
                    status = 1
                    break reading
                }
                guard let body else { break }
                received(body)
            }
        }
        if status == 0 {
            do { try reader.finish() } catch { Self.log("\(error)") }
        }
        perform(focus.ended())
        page.close()
        Self.log("the browser closed its end; exiting")
        return status
    }

    func received(_ body: Data) {
        do {
            perform(focus.received(try BrowserMessage(json: body)))
        } catch let error as BatonProtocolError {
            perform(focus.unreadable(error))
        } catch {
            Self.log("unexpected error: \(error)")
        }
    }

    func perform(_ action: BrowserFocus.Action) {
        switch action {
        case .show(let url, let title):
            do {
                try page.show(url, title: title)
                Self.log("offering \(url.absoluteString) (\"\(title)\")")
            } catch {
                Self.log("cannot offer \(url.absoluteString): \(error)")
            }
        case .resign(let reason):
            page.resign()
            Self.log("not offering a page: \(reason)")
        case .keep(let reason?):
            Self.log(reason)
        case .keep(nil):
            break
        }
    }

    /// E2 (issue 14): a page continued here from another device goes to the extension, which opens it as a new tab.
    static func open(_ url: URL) -> Bool {
        do {
            try FileHandle.standardOutput.write(contentsOf: try NativeMessageReader.frame(HostMessage.open(url: url.absoluteString).json))
            log("opening \(url.absoluteString), continued from another device")
            return true
        } catch {
            log("cannot tell the browser to open \(url.absoluteString): \(error)")
            return false
        }
    }

    /// Standard input in chunks, read by a thread of its own; finishes at end of input.
    nonisolated static func standardInput() -> AsyncStream<[UInt8]> {
        AsyncStream { continuation in
            Thread.detachNewThread {
                var buffer = [UInt8](repeating: 0, count: 64 * 1024)
                while true {
                    let count = read(0, &buffer, buffer.count)
                    if count < 0, errno == EINTR { continue }
                    guard count > 0 else { break }
                    continuation.yield(Array(buffer[..<count]))
                }
                continuation.finish()
            }
        }
    }
}
