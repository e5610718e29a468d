import BatonCore
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Who is at the other end of a Unix socket, as the kernel says (`SO_PEERCRED`): not what the process claims.
public struct PeerCredentials: Sendable, Hashable {
    /// `struct ucred` from `<sys/socket.h>`, which Swift's Glibc module leaves out (it needs `_GNU_SOURCE`).
    public var pid: Int32
    public var uid: UInt32
    public var gid: UInt32

    /// Credentials.
    public init(pid: Int32, uid: UInt32, gid: UInt32) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
    }

    /// The credentials of the process connected to `channel`.
    static func of(_ channel: Channel) -> EventLoopFuture<PeerCredentials> {
        guard let provider = channel as? SocketOptionProvider else {
            return channel.eventLoop.makeFailedFuture(BatonAgentError(.protocolViolation, "the connection has no socket to ask for peer credentials"))
        }
        // SOL_SOCKET = 1 and SO_PEERCRED = 17 on Linux.
        return provider.unsafeGetSocketOption(level: SocketOptionLevel(1), name: SocketOptionName(17))
    }

    /// The executable the process runs, with symbolic links resolved: `/proc/PID/exe`. Nil when the process is gone
    /// or not ours to inspect.
    public static func executable(of pid: Int32) -> String? {
        let link = "/proc/\(pid)/exe"
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink(link, &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        let path = String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        // A replaced binary reads "/path (deleted)": that is not the registered executable any more.
        return path.hasSuffix(" (deleted)") ? nil : path
    }
}

/// The resolved path of a file: what `/proc/PID/exe` shows for a process started from it.
func resolvedPath(_ url: URL) -> String {
    var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
    guard realpath(url.path, &buffer) != nil else { return url.standardizedFileURL.path }
    return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// What the agent does with its IPC connections.
protocol IPCHandler: AnyObject, Sendable {
    func ipcReceived(_ message: IPCMessage, on connection: IPCConnection)
    func ipcClosed(_ connection: IPCConnection)
}

/// One app (or command line) connected to the agent.
final class IPCConnection: MessageSink, @unchecked Sendable {
    let channel: Channel
    let credentials: PeerCredentials
    let handler: IPCHandler
    /// Set once the hello is accepted: the app's bundle identifier, or nil for a control client.
    let identity = NIOLockedValueBox<Identity?>(nil)

    enum Identity: Sendable, Hashable {
        case app(bundle: String, team: String)
        case control
    }

    init(channel: Channel, credentials: PeerCredentials, handler: IPCHandler) {
        self.channel = channel
        self.credentials = credentials
        self.handler = handler
    }

    /// Sends a message.
    func send(_ message: IPCMessage) {
        try? channel.writeMessage(message.propertyList)
    }

    /// Sends a refusal and closes.
    func refuse(_ code: String, _ message: String) {
        send(.refused(code: code, message: message))
        channel.close(promise: nil)
    }

    func received(_ plist: PropertyList) {
        do {
            handler.ipcReceived(try IPCMessage(plist), on: self)
        } catch {
            refuse("malformedMessage", "unreadable message: \(error)")
        }
    }

    func malformed(_ error: Error) {
        refuse("malformedMessage", "unreadable frame: \(error)")
    }

    func closed() {
        handler.ipcClosed(self)
    }
}

/// The agent's Unix socket (ISSUE 5 part 6): a folder only the user can enter, a socket only the user can open, and
/// each peer's credentials taken from the kernel before it may say anything.
enum IPCServer {
    /// Listens at `path`, replacing a stale socket left by an agent that died; refuses when another agent answers
    /// there.
    static func listen(path: String, handler: IPCHandler, group: EventLoopGroup = MultiThreadedEventLoopGroup.singleton) async throws -> Channel {
        let folder = (path as NSString).deletingLastPathComponent
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: folder)
        } catch {
            throw BatonAgentError(.stateUnwritable, "cannot make the socket folder \(folder): \(error)")
        }
        guard path.utf8.count < 108 else {
            throw BatonAgentError(.stateUnwritable, "the socket path \(path) is longer than a Unix socket allows (107 bytes)")
        }
        if FileManager.default.fileExists(atPath: path) {
            if (try? await ClientBootstrap(group: group).connect(unixDomainSocketPath: path).get())?.close(promise: nil) != nil {
                throw BatonAgentError(.alreadyInitialized, "another agent is already running at \(path)")
            }
            unlink(path)
        }
        do {
            let channel = try await ServerBootstrap(group: group)
                .childChannelInitializer { channel in
                    let messages = MessageHandler()
                    return channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(FrameDecoder()))
                        try channel.pipeline.syncOperations.addHandler(MessageToByteHandler(FrameEncoder()))
                        try channel.pipeline.syncOperations.addHandler(messages)
                    }.flatMap {
                        PeerCredentials.of(channel).map { credentials in
                            messages.attach(IPCConnection(channel: channel, credentials: credentials, handler: handler))
                        }
                    }
                }
                .bind(unixDomainSocketPath: path)
                .get()
            chmod(path, 0o600)
            return channel
        } catch {
            throw BatonAgentError.cannotListen(on: path, error)
        }
    }
}
