import BatonAgent
import NIOCore
import Testing

/// Addresses as the agent records and dials them: the host of a datagram's or connection's source, and HOST:PORT text.
@Suite("Peer addresses")
struct AddressTests {
    @Test("an IPv4 peer on a dual-stack socket is recorded as plain IPv4, not ::ffff:a.b.c.d")
    func mappedIPv4() throws {
        #expect(try SocketAddress(ipAddress: "::ffff:10.77.0.2", port: 1).hostText == "10.77.0.2")
        #expect(try SocketAddress(ipAddress: "10.77.0.2", port: 1).hostText == "10.77.0.2")
    }

    @Test("a link-local IPv6 source keeps its interface (C2: dialled back over the link it came from)")
    func scopedLinkLocal() throws {
        // Index 1 is lo on Linux: the interface name is read back from the scope id.
        let scoped = try SocketAddress(ipAddress: "fe80::77:ff:fe00:1%lo", port: 47810)
        #expect(scoped.hostText == "fe80::77:ff:fe00:1%lo")
        #expect(try SocketAddress(ipAddress: "2001:db8::1", port: 1).hostText == "2001:db8::1")
        // The recorded text parses back to the same scoped address.
        let text = try #require(scoped.hostText)
        #expect(try SocketAddress(ipAddress: text, port: 47810) == scoped)
        // As a recorded peer address is resolved before adverts are sent to it.
        #expect(try SocketAddress.makeAddressResolvingHost(text, port: 47810).hostText == text)
    }

    @Test("HOST:PORT text round-trips, IPv6 (scoped or not) in brackets")
    func hostPortText() throws {
        for (host, port) in [("10.77.0.1", 47810), ("::1", 1), ("fe80::1%eth0", 65_535), ("laptop.local", 80)] {
            let text = Agent.joinHostPort(host, port)
            let parsed = try #require(Agent.splitHostPort(text), "\(text)")
            #expect(parsed.0 == host && parsed.1 == port, "\(text)")
        }
        #expect(Agent.joinHostPort("fe80::1%eth0", 47810) == "[fe80::1%eth0]:47810")
        for bad in ["", "host", "host:", ":80", "host:0", "host:65536", "[]:80", "host:port"] {
            #expect(Agent.splitHostPort(bad) == nil, "\(bad)")
        }
    }
}
