#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The two pipes of a bus app's continuation stream (issue 28 item 1; docs/PROTOCOL.md §11 "Streams"), one a
/// direction: the app's `input` (it reads what the other device's app wrote) and `output` (it writes), and the agent's
/// ends of the same pipes. All four are close-on-exec, so no program the agent launches inherits one; the app's ends
/// stay blocking (the app decides), the agent's are made non-blocking by NIO.
struct DBusStreamPipes: Sendable {
    /// The app's read end of the pipe towards it.
    let appInput: Int32
    /// The app's write end of the pipe from it.
    let appOutput: Int32
    /// The agent's read end of the pipe from the app.
    let agentInput: Int32
    /// The agent's write end of the pipe towards the app.
    let agentOutput: Int32

    /// Makes both pipes.
    /// - Throws: ``DBusStreamRefusal`` (`tooManyStreams`) when the kernel gives no pipe (the descriptor limit).
    init() throws {
        var toApp: [Int32] = [-1, -1]
        var fromApp: [Int32] = [-1, -1]
        guard makePipe(&toApp, O_CLOEXEC) == 0 else { throw Self.failure(errno) }
        guard makePipe(&fromApp, O_CLOEXEC) == 0 else {
            let code = errno
            close(toApp[0])
            close(toApp[1])
            throw Self.failure(code)
        }
        appInput = toApp[0]
        agentOutput = toApp[1]
        agentInput = fromApp[0]
        appOutput = fromApp[1]
    }

    private static func failure(_ code: Int32) -> DBusStreamRefusal {
        DBusStreamRefusal(.stream(.tooManyStreams), "the agent cannot make a stream's pipes: \(String(cString: strerror(code))) (errno \(code))")
    }

    /// Closes the agent's ends (when they could not be handed to a channel).
    func closeAgentEnds() {
        close(agentInput)
        close(agentOutput)
    }
}

/// `pipe2(2)`, which Swift's Glibc module leaves out (it needs `_GNU_SOURCE`): a pipe made close-on-exec at once,
/// never open without the flag while another thread starts a program (the launcher).
@_silgen_name("pipe2")
private func makePipe(_ descriptors: UnsafeMutablePointer<Int32>, _ flags: Int32) -> Int32
