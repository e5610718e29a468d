import BatonCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The agent's state files go through BatonCore's ``AtomicFile`` and fail with ``BatonAgentError``
/// `stateUnwritable`, naming the file and the system's words.
extension AtomicFile {
    static func store(_ data: Data, at url: URL) throws {
        try store(data, at: url, failure: failure)
    }

    static func failure(_ what: String) -> BatonAgentError {
        BatonAgentError(.stateUnwritable, describe(what))
    }
}
