import BatonProtocol
import Testing

/// C5 counted over a run of broker actions: which continuations' apps were told `willContinue`, how many endings
/// (`deliver` or `failed`) each then heard, and how often each finished. The two property tests (with and without
/// time) tally the same way and judge it with ``expectExactlyOneEnding(continuations:)``.
struct EndingTally {
    private(set) var told: Set<UInt64> = []
    private(set) var endings: [UInt64: Int] = [:]
    private(set) var finished: [UInt64: Int] = [:]
    /// Continuations whose app went away: it cannot be told its ending.
    private(set) var gone: Set<UInt64> = []
    private(set) var delivered: Set<UInt64> = []

    /// Counts what `action` tells or finishes; an ending before `willContinue`, or a second `willContinue`, is
    /// recorded as an issue at once.
    mutating func count(_ action: HandoffBroker.Action) {
        switch action {
        case .tellWillContinue(_, let id, _):
            #expect(!told.contains(id.value), "told once")
            told.insert(id.value)
        case .deliver(_, let id, _), .tellFailed(_, let id, _, _, _):
            #expect(told.contains(id.value), "an ending only after willContinue")
            endings[id.value, default: 0] += 1
            if case .deliver = action { delivered.insert(id.value) }
        case .finished(let id, let outcome):
            finished[id.value, default: 0] += 1
            if outcome.failure == .fetch(.appGone) { gone.insert(id.value) }
        default:
            break
        }
    }

    /// C5: every app told `willContinue` heard exactly one ending (but the one that went away), and each of the
    /// continuations numbered `continuations` finished exactly once.
    func expectExactlyOneEnding(continuations: Range<UInt64>) {
        for id in told {
            #expect(endings[id, default: 0] == (gone.contains(id) ? 0 : 1), "continuation \(id): \(endings[id, default: 0]) endings")
        }
        #expect(finished.values.allSatisfy { $0 == 1 }, "every continuation finishes once")
        #expect(Set(finished.keys) == Set(continuations), "and every one finishes")
    }
}
