import ArgumentParser
import BatonAgent
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

// What `baton` and `baton-agent` share: `--state`, `--peer HOST:PORT`, and errors reported as plain messages. In its
// own module so the lean agent executable links neither the rest of the command line nor Foundation.

/// An error the command line reports as it is, already naming the file and place.
public struct CommandLineError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// `--state DIR`, shared by every command that uses this device's account.
public struct StateOptions: ParsableArguments {
    @Option(name: .customLong("state"), help: ArgumentHelp("The state folder (default: $XDG_DATA_HOME/baton).", valueName: "dir"))
    public var folder: String?

    public init() {}

    public var store: AccountStore {
        AccountStore(folder: folder.map { URL(fileURLWithPath: $0) } ?? AccountStore.defaultFolder())
    }
}

/// A `host:port` given on the command line (`[::1]:47810` for IPv6).
public struct PeerAddress: ExpressibleByArgument, CustomStringConvertible, Sendable {
    public let host: String
    public let port: Int

    public init?(argument: String) {
        guard let (host, port) = Agent.splitHostPort(argument) else { return nil }
        self.host = host
        self.port = port
    }

    public var description: String { Agent.joinHostPort(host, port) }
}

/// Runs `body`, turning agent errors into messages that stand alone.
public func reportingAgentErrors<T>(_ body: () throws -> T) throws -> T {
    do {
        return try body()
    } catch let error as BatonAgentError {
        throw CommandLineError(error.description)
    }
}

/// Runs `body`, turning agent errors into plain messages.
public func reportingAgentErrorsAsync<T>(_ body: () async throws -> T) async throws -> T {
    do {
        return try await body()
    } catch let error as BatonAgentError {
        throw CommandLineError(error.description)
    } catch let error as BatonClientError {
        throw CommandLineError(error.description)
    }
}
