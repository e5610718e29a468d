import Foundation

extension NSUserActivity {
    /// Apple's `getContinuationStreams(completionHandler:)` (F2): opens a continuation stream to the app this activity
    /// was continued from and gives its two halves as Foundation streams, or the error (a ``ContinuationError``, an
    /// `NSError` in the Cocoa domain: see ``UserActivity/continuationStreams()`` for the codes). Open both streams
    /// before use; closing the output stream ends this side's writing (a half-close).
    ///
    /// The handler runs off the main thread, as on Apple's systems (hop to the main actor for the UI), on a thread of
    /// its own: it may read and write the streams right there, blocking, for the whole exchange, without holding up
    /// anything else. Not a global dispatch queue: on Linux Swift's tasks run on that same pool (its
    /// `com.apple.root.default-qos` threads, as many as cores), so a handler blocked there stalls every task too.
    public func getContinuationStreams(completionHandler: @escaping @Sendable (InputStream?, OutputStream?, (any Error)?) -> Void) {
        let activity = self.activity
        Task.detached {
            let result: Result<FoundationStreams, any Error>
            do {
                result = .success(FoundationStreams(ContinuationInputStream.pair(try await activity.openStreamEnd())))
            } catch {
                result = .failure(error)
            }
            Thread.detachNewThread {
                switch result {
                case .success(let streams): completionHandler(streams.input, streams.output, nil)
                case .failure(let error): completionHandler(nil, nil, error)
                }
            }
        }
    }

    /// The async form Swift gives Apple's `getContinuationStreams(completionHandler:)`.
    /// - Throws: ``ContinuationError``, as ``UserActivity/continuationStreams()``.
    public func continuationStreams() async throws -> (InputStream, OutputStream) {
        ContinuationInputStream.pair(try await activity.openStreamEnd())
    }
}

/// A continuation stream's two Foundation streams, carried to the thread that hands them over. `@unchecked
/// Sendable`: both are this library's stream classes, whose state is behind locks (Foundation marks `Stream` not
/// Sendable, so they cannot say so themselves).
struct FoundationStreams: @unchecked Sendable {
    let input: InputStream
    let output: OutputStream

    init(_ pair: (InputStream, OutputStream)) {
        (input, output) = pair
    }
}
