#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import NIOCore

extension SocketAddress {
    /// The host part as peers are recorded, shown and dialled back: dotted IPv4 (also for an IPv4-mapped IPv6
    /// address, which is how a dual-stack socket reports an IPv4 peer), IPv6 with `%interface` when the address is
    /// scoped (link-local: `fe80::1%eth0`, which cannot be reached without naming the interface); nil for Unix sockets.
    public var hostText: String? {
        switch self {
        case .v4:
            return ipAddress
        case .v6(let address):
            guard let text = ipAddress else { return nil }
            if text.lowercased().hasPrefix("::ffff:"), text.contains(".") { return String(text.dropFirst(7)) }
            let scope = address.address.sin6_scope_id
            return scope == 0 ? text : text + "%" + Self.interfaceName(scope)
        case .unixDomainSocket:
            return nil
        }
    }

    /// The name of interface `index` (`eth0`), or the index as text when it has none (it went away).
    static func interfaceName(_ index: UInt32) -> String {
        var name = [CChar](repeating: 0, count: Int(IF_NAMESIZE) + 1)
        guard if_indextoname(index, &name) != nil else { return String(index) }
        return String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
