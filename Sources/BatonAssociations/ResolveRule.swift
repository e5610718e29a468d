/// `--resolve DOMAIN:PORT:ADDRESS`: fetch DOMAIN's files from ADDRESS:PORT, still checking the certificate for
/// DOMAIN (what curl's `--connect-to DOMAIN:443:ADDRESS:PORT` does). For tests and private deployments.
public struct ResolveRule: Sendable, Hashable, CustomStringConvertible {
    /// The domain whose files are fetched (lowercased).
    public var domain: String
    /// The port to connect to.
    public var port: Int
    /// The address (or host name) to connect to.
    public var address: String

    /// A rule from its parts.
    public init(domain: String, port: Int, address: String) {
        self.domain = domain.lowercased()
        self.port = port
        self.address = address
    }

    /// Parses `DOMAIN:PORT:ADDRESS`; an IPv6 address may be bracketed (`[::1]`). Nil when it is not that shape.
    public init?(argument: String) {
        let parts = argument.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, let port = Int(parts[1]), (1...65_535).contains(port), !parts[2].isEmpty else { return nil }
        var address = String(parts[2])
        if address.hasPrefix("["), address.hasSuffix("]") { address = String(address.dropFirst().dropLast()) }
        self.init(domain: String(parts[0]), port: port, address: address)
    }

    public var description: String { "\(domain):\(port):\(address.contains(":") ? "[\(address)]" : address)" }
}
