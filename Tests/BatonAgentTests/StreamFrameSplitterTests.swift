import BatonClient
import BatonTestSupport
import NIOCore
import Testing

/// Issue 30: the direct stream's frame splitter reads what ``FrameDecoder`` reads, whatever the reads' boundaries,
/// hands data on as it comes (never more than one frame's bytes in a piece), and refuses what is past the limits.
@Suite("Issue 30: StreamFrameSplitter")
struct StreamFrameSplitterTests {
    /// What came out, with a data frame's pieces joined (frames of the same stream next to each other join too).
    enum Out: Equatable {
        case message([UInt8])
        case data(UInt64, Bool, [UInt8])
    }

    static func run(_ bytes: [UInt8], cuts: [Int]) -> (out: [Out], error: BatonClientError?, pieces: [Int]) {
        var splitter = StreamFrameSplitter()
        var out: [Out] = []
        var pieces: [Int] = []
        var start = 0
        for end in (cuts.filter { $0 > 0 && $0 < bytes.count }.sorted() + [bytes.count]) where end >= start {
            var buffer = ByteBuffer(bytes: bytes[start..<end])
            start = end
            do {
                try splitter.split(&buffer, allocator: ByteBufferAllocator()) { frame in
                    switch frame {
                    case .message(let body):
                        out.append(.message(Array(body.readableBytesView)))
                    case .data(let stream, let opener, let piece):
                        pieces.append(piece.readableBytes)
                        if case .data(stream, opener, let before)? = out.last {
                            out[out.count - 1] = .data(stream, opener, before + Array(piece.readableBytesView))
                        } else {
                            out.append(.data(stream, opener, Array(piece.readableBytesView)))
                        }
                    }
                }
            } catch {
                return (out, error, pieces)
            }
        }
        return (out, nil, pieces)
    }

    static func dataFrame(_ stream: UInt64, _ bytes: [UInt8], opener: Bool = false) -> [UInt8] {
        var header = FrameEncoder.dataHeader(stream: stream, opener: opener, count: bytes.count)
        return Array(header.readBytes(length: header.readableBytes) ?? []) + bytes
    }

    static func message(_ body: [UInt8]) -> [UInt8] {
        withUnsafeBytes(of: UInt32(body.count).bigEndian, Array.init) + body
    }

    @Test("issue 30: data, an empty data frame and an eof message, in one read and cut at every byte, read the same")
    func everyCut() {
        let payload = (0..<3_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let bytes = Self.dataFrame(0, payload) + Self.dataFrame(0, []) + Self.message(Array("eof".utf8)) + Self.dataFrame(5, [1, 2], opener: true)
        let whole = Self.run(bytes, cuts: [])
        #expect(whole.error == nil)
        #expect(whole.out == [.data(0, false, payload), .message(Array("eof".utf8)), .data(5, true, [1, 2])])
        for cut in 1..<bytes.count {
            let split = Self.run(bytes, cuts: [cut])
            #expect(split.out == whole.out && split.error == nil, "cut at \(cut)")
            #expect(split.pieces.allSatisfy { $0 > 0 })
        }
        let byteByByte = Self.run(bytes, cuts: Array(1..<bytes.count))
        #expect(byteByByte.out == whole.out)
    }

    @Test("issue 30: a data frame past 256 KiB, shorter than its header, or a message past 64 KiB is refused at its header")
    func limits() {
        let tooLong = withUnsafeBytes(of: (UInt32(Frame.dataHeaderLength + Frame.maximumData + 1) | Frame.dataBit).bigEndian, Array.init)
        let tooShort = withUnsafeBytes(of: (UInt32(3) | Frame.dataBit).bigEndian, Array.init)
        let bigMessage = withUnsafeBytes(of: UInt32(StreamFrameSplitter.maximumMessageLength + 1).bigEndian, Array.init)
        for header in [tooLong, tooShort, bigMessage] {
            let run = Self.run(Self.message([1]) + header + [0, 0, 0], cuts: [])
            #expect(run.out == [.message([1])], "the frame before it is read")
            #expect(run.error?.code == .protocolViolation)
        }
        let largest = Self.run(Self.dataFrame(0, [UInt8](repeating: 9, count: Frame.maximumData)), cuts: [70_000, 140_000])
        #expect(largest.error == nil && largest.out == [.data(0, false, [UInt8](repeating: 9, count: Frame.maximumData))])
    }

    @Test("issue 30: garbage (4,000 seeded byte strings cut at seeded places) never traps; pieces are non-empty and never larger than a frame; the cuts never change the frames")
    func garbage() {
        var generator = SplitMix64(state: 30)
        for _ in 0..<4_000 {
            let count = Int.random(in: 0...96, using: &generator)
            var bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
            // Half start as a frame would, so the later states are reached.
            if Bool.random(using: &generator), count > 4 {
                bytes[0] = Bool.random(using: &generator) ? 0x80 : 0
                bytes[1] = 0
                bytes[2] = 0
            }
            let whole = Self.run(bytes, cuts: [])
            let cuts = (0..<Int.random(in: 1...4, using: &generator)).map { _ in Int.random(in: 0...max(1, count), using: &generator) }
            let split = Self.run(bytes, cuts: cuts)
            #expect(split.out == whole.out && (split.error == nil) == (whole.error == nil), "\(bytes) cut at \(cuts)")
            #expect(split.pieces.allSatisfy { $0 > 0 && $0 <= Frame.maximumData })
        }
    }
}
