import BatonCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Where a device was last reached, and when.
public struct PeerRecord: Sendable, Hashable {
    /// `host:port` of its agent, if known.
    public var address: String?
    /// The last time a session with it succeeded.
    public var lastSeen: Date?
}

extension AccountStore {
    var peersURL: URL { folder.appendingPathComponent("peers.plist") }

    /// The known peers by device id.
    public func peers() throws -> [DeviceID: PeerRecord] {
        guard FileManager.default.fileExists(atPath: peersURL.path) else { return [:] }
        guard case .dictionary(let entries) = try readDocument(peersURL, what: "peer list") else { return [:] }
        var peers: [DeviceID: PeerRecord] = [:]
        for (key, value) in entries {
            guard let id = try? DeviceID(parsing: key) else { continue }
            peers[id] = PeerRecord(address: value["address"]?.stringValue, lastSeen: value["lastSeen"]?.dateValue)
        }
        return peers
    }

    /// The agent addresses of the account's other active devices, as last recorded.
    public func knownPeerAddresses(excluding me: DeviceID) -> [String] {
        guard let roster = try? roster(), let peers = try? peers() else { return [] }
        return peers.filter { $0.key != me && roster.isActive($0.key) }.compactMap(\.value.address).sorted()
    }

    /// Moves a damaged peer list aside as `peers.plist.damaged` (the caller holds the state lock).
    private func setAsideDamagedPeers() {
        let aside = folder.appendingPathComponent("peers.plist.damaged")
        try? FileManager.default.removeItem(at: aside)
        try? FileManager.default.moveItem(at: peersURL, to: aside)
    }

    /// Sets the peer list aside when it cannot be read, so it is rebuilt from the next syncs (ISSUE 10 item 8); the
    /// agent calls this when the state folder changes. True when it was damaged.
    public func repairPeers() throws -> Bool {
        // Reading takes no lock (opening the lock file is itself a change in the folder); only a repair does.
        guard (try? peers()) == nil else { return false }
        return try withStateLock {
            do {
                _ = try peers()
                return false
            } catch let error as BatonAgentError where error.code == .stateCorrupt {
                setAsideDamagedPeers()
                return true
            }
        }
    }

    /// Records a successful session with `id`, and its agent's address when known.
    ///
    /// The peer list is a cache, rebuilt from syncs: a damaged `peers.plist` does not stop anything (ISSUE 10 item
    /// 8). It is set aside as `peers.plist.damaged` and a new list started; the result says so, for the log.
    /// `seen` is the system's clock, not an agent's (issue 26 item 2): `peers.plist` is read by other processes.
    /// - Returns: true when a damaged list was set aside.
    @discardableResult
    public func recordPeer(_ id: DeviceID, address: String?, seen: Date = Date()) throws -> Bool {
        try withStateLock {
            var peers: [DeviceID: PeerRecord]
            var rebuilt = false
            do {
                peers = try self.peers()
            } catch let error as BatonAgentError where error.code == .stateCorrupt {
                setAsideDamagedPeers()
                peers = [:]
                rebuilt = true
            }
            var record = peers[id] ?? PeerRecord()
            if let address { record.address = address }
            record.lastSeen = seen
            peers[id] = record
            var entries: [String: PropertyList] = [:]
            for (peer, record) in peers {
                var entry: [String: PropertyList] = [:]
                if let address = record.address { entry["address"] = .string(address) }
                if let lastSeen = record.lastSeen { entry["lastSeen"] = .date(lastSeen) }
                entries[peer.description] = .dictionary(entry)
            }
            try AtomicFile.store(try BinaryPropertyListEncoder.encode(.dictionary(entries)), at: peersURL)
            return rebuilt
        }
    }
}
