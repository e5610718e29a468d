import BatonCore

/// What another device said its current activity is (C3), and which advert of it that answers: the sequence and
/// the revision (a new title moves the revision on, and the device is asked again).
struct NearbySummary: Sendable {
    let sequence: UInt64
    let revision: UInt8
    let summary: ActivitySummary
    /// The name of the application that will open it here, when one of the agent's own apps continues it (issue 27
    /// item 3): found once, as the description arrives.
    let opensWith: String?

    init(of advert: Advert, _ summary: ActivitySummary, opensWith: String? = nil) {
        sequence = advert.sequence
        revision = advert.flags.revision
        self.summary = summary
        self.opensWith = opensWith
    }

    /// Whether this is what `advert` offers now.
    func describes(_ advert: Advert) -> Bool {
        sequence == advert.sequence && revision == advert.flags.revision
    }
}
