import BatonClient
import Foundation
import Testing

@testable import BatonAgent

/// Issue 25 item 7: at the descriptor limit a launch fails naming that limit, not "not ShopSnap's executable". The
/// limit is reached in a child run of this test binary (its own process, lowered `RLIMIT_NOFILE`), so no other test
/// runs short of descriptors.
@Suite("Descriptor limit at launch (issue 25 item 7)")
struct DescriptorLimitTests {
    static let childVariable = "BATON_DESCRIPTOR_LIMIT_CHILD"

    @Test("issue 25 item 7, C8: at the descriptor limit the cause is named (too many open files), and seen where /proc cannot be read")
    func launchFailedNamesTheLimit() throws {
        #expect(Launcher.describe(EMFILE).hasPrefix("too many open files") && Launcher.describe(ENFILE).hasPrefix("too many open files"))
        if ProcessInfo.processInfo.environment[Self.childVariable] == "1" {
            return Self.atTheLimit()
        }
        #expect(!Launcher.descriptorsExhausted())
        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        child.arguments = ["--testing-library", "swift-testing", "--filter", "DescriptorLimitTests"]
        child.environment = ProcessInfo.processInfo.environment.merging([Self.childVariable: "1"]) { _, new in new }
        let output = Pipe()
        child.standardOutput = output
        child.standardError = output
        child.standardInput = FileHandle.nullDevice
        try child.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        child.waitUntilExit()
        #expect(child.terminationStatus == 0, "\(text.suffix(2000))")
        #expect(text.contains("with 1 test"), "\(text.suffix(2000))")
    }

    /// In the child: descriptors used up to a lowered limit, then given back.
    static func atTheLimit() {
        var saved = rlimit()
        getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &saved)
        var lowered = saved
        lowered.rlim_cur = min(saved.rlim_cur, 256)
        setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &lowered)
        var opened: [Int32] = []
        while opened.count < 100_000 {
            let fd = open("/dev/null", O_RDONLY | O_CLOEXEC)
            if fd < 0 { break }
            opened.append(fd)
        }
        let exhausted = Launcher.descriptorsExhausted()
        let stamp = ProcessStamp.of(getpid())
        for fd in opened { close(fd) }
        setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &saved)
        #expect(exhausted, "opening /dev/null fails with EMFILE at the limit")
        // What the hello check reads: the start time needs a descriptor (it is nil at the limit, which made a
        // launched app look like an impostor); the executable's link does not.
        #expect(stamp.startTime == nil && stamp.executable != nil, "\(stamp)")
        #expect(!Launcher.descriptorsExhausted(), "given back")
    }
}
