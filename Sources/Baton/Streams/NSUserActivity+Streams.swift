import Foundation

extension NSUserActivity {
    /// Apple's `getContinuationStreams(completionHandler:)` (F2): opens a continuation stream to the app this activity
    /// was continued from and gives its two halves as Foundation streams, or the error (a ``ContinuationError``, an
    /// `NSError` in the Cocoa domain: see ``UserActivity/continuationStreams()`` for the codes). Open both streams
    /// before use; closing the output stream ends this side's writing (a half-close).
    ///
    /// The handler runs on no particular thread, as on Apple's systems: hop to the main actor for the UI. The streams
    /// block when used without a run loop, so read and write them off the main actor for anything long.
    public func getContinuationStreams(completionHandler: @escaping @Sendable (InputStream?, OutputStream?, (any Error)?) -> Void) {
        let activity = self.activity
        Task.detached {
            let end: StreamEnd
            do {
                end = try await activity.openStreamEnd()
            } catch {
                return completionHandler(nil, nil, error)
            }
            let (input, output) = ContinuationInputStream.pair(end)
            completionHandler(input, output, nil)
        }
    }

    /// The async form Swift gives Apple's `getContinuationStreams(completionHandler:)`.
    /// - Throws: ``ContinuationError``, as ``UserActivity/continuationStreams()``.
    public func continuationStreams() async throws -> (InputStream, OutputStream) {
        ContinuationInputStream.pair(try await activity.openStreamEnd())
    }
}
