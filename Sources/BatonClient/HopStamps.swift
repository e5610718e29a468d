#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import NIOConcurrencyHelpers
import Synchronization

/// Moments on the way of one continuation's state, stamped inside the processes for `baton bench handoff` (issue 26
/// item 5) to cut its "origin app asked → continuing app has the state" leg hop by hop. Off unless the bench turns it
/// on (``isOn``): then each stamp costs one relaxed atomic load. Nothing of it reaches the wire.
package enum HopStamps {
    /// One point of the state's way; the order of the cases is the order of the way.
    package enum Point: String, Sendable, CaseIterable {
        /// The origin app's library was given the agent's `save`, on its main actor.
        case appSaveAsked = "origin app library: save received"
        /// The app's delegates have run and the state is encoded (its `ActivityPayload`, a binary property list).
        case appStateEncoded = "origin app library: state saved and encoded"
        /// The `saved` IPC message is encoded and handed to the connection.
        case appSavedSent = "origin app library: saved sent"
        /// A message frame of at least ``largeFrame`` bytes came to a `MessageHandler`, before its decoding.
        case frameRead = "a 3 KB frame read"
        /// That frame decoded into a property list.
        case frameDecoded = "a 3 KB frame decoded"
        /// A's app socket has the `saved` message (decoded), about to give it to the broker.
        case agentSavedReceived = "A: saved received"
        /// A's peer link is about to encode and write the fetch's reply with the state.
        case agentReplySending = "A: reply with the state encoding"
        /// That reply written (encoded, on its way through TLS).
        case agentReplySent = "A: reply with the state written"
        /// B's peer link has the reply decoded, about to complete the fetch.
        case peerReplyReceived = "B: reply with the state received"
        /// B's app socket is about to encode and write `deliver`.
        case agentDeliverSending = "B: deliver encoding"
        /// `deliver` written.
        case agentDeliverSent = "B: deliver written"
        /// The continuing app's client decoded `deliver`, about to hand it to its stream.
        case clientDeliverReceived = "continuing app client: deliver received"
        /// The continuing app's library has `deliver`, on its main actor.
        case appDeliverReceived = "continuing app library: deliver received"
        /// The state decoded into an activity, about to go to the delegate.
        case appStateDecoded = "continuing app library: state decoded"

        // The visible path (becomeCurrent → B's nearby table), in its order.
        /// The origin app's client handed `becomeCurrent` to its connection (encoded; the write goes to its loop).
        case appCurrentSent = "origin app client: becomeCurrent handed to its connection"
        /// A's app socket has `becomeCurrent` (decoded), about to give it to the broker.
        case agentCurrentReceived = "A: becomeCurrent received"
        /// The broker decided to advertise: discovery is told (``Point/advertSealed`` follows).
        case advertDecided = "A: advert decided"
        /// The advert built and sealed (A1, A2), about to be sent.
        case advertSealed = "A: advert sealed"
        /// The advert's `sendto` returned.
        case advertSent = "A: advert sent"
        /// B's advert socket read a datagram of an advert's length.
        case advertReceived = "B: advert read"
        /// B opened and checked it (A1–A8) and applied it to its nearby table, about to tell the observers.
        case advertApplied = "B: advert opened, nearby table changed"
    }

    /// One stamp: where, when (CLOCK_MONOTONIC nanoseconds, the bench's clock), on which thread.
    package struct Stamp: Sendable {
        package var point: Point
        package var nanoseconds: UInt64
        package var thread: UInt
    }

    /// Frames at least this long are stamped by ``Point/frameRead``: the three that carry a 3 KB state; every other
    /// message of a continuation is a few dozen bytes.
    package static let largeFrame = 2_048

    private static let on = Atomic<Bool>(false)
    private static let stamps = NIOLockedValueBox<[Stamp]>([])

    /// Whether stamps are taken.
    package static var isOn: Bool { on.load(ordering: .relaxed) }

    /// Starts or stops stamping; either way forgets the stamps taken.
    package static func turn(on: Bool) {
        stamps.withLockedValue { $0.removeAll(keepingCapacity: true) }
        Self.on.store(on, ordering: .relaxed)
    }

    /// Stamps `point` now, when stamping is on.
    @inline(__always)
    package static func stamp(_ point: Point) {
        guard isOn else { return }
        record(point)
    }

    /// Takes the stamps so far, oldest first, and forgets them.
    package static func take() -> [Stamp] {
        stamps.withLockedValue { taken in
            defer { taken.removeAll(keepingCapacity: true) }
            return taken
        }
    }

    private static func record(_ point: Point) {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        let stamp = Stamp(point: point, nanoseconds: UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec), thread: UInt(pthread_self()))
        stamps.withLockedValue { $0.append(stamp) }
    }
}
