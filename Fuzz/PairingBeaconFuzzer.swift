// libFuzzer entry point for the pairing beacon (issue 24): the datagram a waiting `baton pair` announces on the
// adverts' multicast groups, which anyone on the LAN can forge, and the list `baton pair --find` builds from them.
//
// Compiled together with BatonProtocol's error and the two beacon files into one module by scripts/fuzz.sh beacon
// (not part of the package build: a fuzzer has no `main`; these files need nothing else). Each input is read as one
// datagram and as a run of datagrams (split at 0x00 0xFF) fed to the sightings. A trap, a sanitizer report, an untyped
// error or one with another code, a beacon that does not write back to its own bytes, a name that is not already
// sanitized, or a list over its bounds stops the fuzzer with the input saved.
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func pairingBeaconFuzzerTestOneInput(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let input = Array(UnsafeBufferPointer(start: bytes, count: count))
    do {
        let beacon = try PairingBeacon(datagram: input)
        precondition(beacon.datagram == input, "a beacon read from bytes that are not its encoding")
        precondition(input.count <= PairingBeacon.maximumDatagramLength, "a beacon longer than the limit")
        precondition(PairingBeacon.sanitizedName(beacon.name) == beacon.name, "a name that sanitizing would change")
        let again = try PairingBeacon(nonce: beacon.nonce, displayName: beacon.name, port: beacon.port)
        precondition(again == beacon, "encoding a read beacon changes it")
    } catch let error as BatonProtocolError {
        precondition([.notPairingBeacon, .invalidPairingBeacon, .unsupportedVersion].contains(error.code), "unexpected error code: \(error)")
    } catch {
        preconditionFailure("untyped error: \(error)")
    }
    // Any text the fuzzer makes up as a device name is sanitized to something a beacon carries.
    let name = String(decoding: input.prefix(256), as: UTF8.self)
    let sanitized = PairingBeacon.sanitizedName(name)
    precondition(sanitized.utf8.count <= PairingBeacon.maximumNameBytes && !sanitized.isEmpty, "a sanitized name out of bounds")
    precondition(PairingBeacon.sanitizedName(sanitized) == sanitized, "sanitizing twice changes a name")
    var sightings = PairingBeaconSightings()
    var start = 0
    var index = 0
    var source = 0
    while index + 1 < input.count {
        if input[index] == 0x00, input[index + 1] == 0xFF {
            sightings.receive(input[start..<index], from: "10.0.0.\(source % 7)")
            source += 1
            start = index + 2
            index += 2
        } else {
            index += 1
        }
    }
    sightings.receive(input[start...], from: "fe80::1%eth0")
    precondition(sightings.sightings.count <= PairingBeaconSightings.maximumSightings, "more sightings than the limit")
    for sighting in sightings.sightings {
        precondition(sighting.hosts.count <= PairingBeaconSightings.maximumHostsPerSighting, "more hosts than the limit")
    }
    return 0
}
