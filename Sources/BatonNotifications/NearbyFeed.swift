import BatonProtocol

/// What the desktop notifier knows of the agent, and all it may ask of it (issue 26 items 1 and 4): when what is
/// nearby changed, the offers to show, and Continue. The agent makes one (`Agent+Notifications`); the notifier never
/// holds the agent or reads its state, and the agent never holds the notifier.
public struct NearbyFeed: Sendable {
    /// Starts listening and returns an element for each change of what is nearby (the offers are read again then).
    /// Called once, when a notification server can be reached: without one nothing listens.
    public var nearbyChanges: @Sendable () -> AsyncStream<Void>
    /// The offers to show now: the nearby items an app here continues, each described by its device (C3, at most 1 s).
    public var offers: @Sendable () async -> [NearbyNotifications.Offer]
    /// Continues the device's offer here, as `baton continue` does (C5), once a person chose Continue.
    public var continueNearby: @Sendable (_ device: String) async -> ContinuationOutcome

    /// A feed from its three parts.
    public init(
        nearbyChanges: @escaping @Sendable () -> AsyncStream<Void>,
        offers: @escaping @Sendable () async -> [NearbyNotifications.Offer],
        continueNearby: @escaping @Sendable (_ device: String) async -> ContinuationOutcome
    ) {
        self.nearbyChanges = nearbyChanges
        self.offers = offers
        self.continueNearby = continueNearby
    }
}
