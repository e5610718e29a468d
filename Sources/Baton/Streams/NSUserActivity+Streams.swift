import Foundation

extension NSUserActivity {
    /// Apple's `getContinuationStreams(completionHandler:)` (F2): opens a continuation stream to the app this activity
    /// was continued from and gives its two halves as Foundation streams, or the error (a ``ContinuationError``, an
    /// `NSError` in the Cocoa domain: see ``UserActivity/continuationStreams()`` for the codes). Open both streams
    /// before use; closing the output stream ends this side's writing (a half-close).
    ///
    /// The handler runs on a global dispatch queue, as on Apple's systems on no particular thread: hop to the main
    /// actor for the UI. The streams block when used without a run loop, and code written for Apple's often reads
    /// and writes them right in the handler: a dispatch queue's thread may block, where one of Swift's few
    /// cooperative threads blocked would stall every task of the app.
    public func getContinuationStreams(completionHandler: @escaping @Sendable (InputStream?, OutputStream?, (any Error)?) -> Void) {
        let activity = self.activity
        Task.detached {
            let end: StreamEnd
            do {
                end = try await activity.openStreamEnd()
            } catch {
                return DispatchQueue.global().async { completionHandler(nil, nil, error) }
            }
            let (input, output) = ContinuationInputStream.pair(end)
            let streams = UncheckedStreams(input: input, output: output)
            DispatchQueue.global().async { completionHandler(streams.input, streams.output, nil) }
        }
    }

    /// The async form Swift gives Apple's `getContinuationStreams(completionHandler:)`.
    /// - Throws: ``ContinuationError``, as ``UserActivity/continuationStreams()``.
    public func continuationStreams() async throws -> (InputStream, OutputStream) {
        ContinuationInputStream.pair(try await activity.openStreamEnd())
    }
}

/// Foundation's streams, handed to the thread that runs the completion handler and used only there.
private struct UncheckedStreams: @unchecked Sendable {
    let input: InputStream
    let output: OutputStream
}
