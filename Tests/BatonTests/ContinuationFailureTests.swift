@testable import Baton
import BatonProtocol
import Foundation
import Testing

/// C8: why a continuation failed reaches the app typed, from the originating device's `fail` to the app's
/// `ContinuationError`, with a string only on the wire (issue 11 part 5).
@Suite("Continuation failures reach the app as their own code (C8)")
@MainActor
struct ContinuationFailureTests {
    static let type = "com.example.notes.edit"

    /// `message` as the agent writes it to the app socket and the app reads it back.
    static func overTheSocket(_ message: IPCMessage) throws -> IPCMessage {
        try IPCMessage(BinaryPropertyListDecoder.decode(BinaryPropertyListEncoder.encode(message.propertyList)))
    }

    /// What the app hears next: the error of the next `failed` event.
    static func nextFailure(_ events: AsyncStream<ContinuationEvent>) async -> ContinuationError? {
        for await event in events {
            if case .failed(_, let error) = event { return error }
        }
        return nil
    }

    @Test("every reason has its own code, none of them `other`")
    func distinctCodes() {
        let codes = ContinuationFailure.allCases.map(ContinuationError.Code.init)
        #expect(Set(codes).count == ContinuationFailure.allCases.count)
        #expect(!codes.contains(.other))
        #expect(ContinuationError.Code(.fetch(.protocolViolation)) == .protocolViolation)
        #expect(ContinuationError.Code(.fetch(.unsupported)) == .unsupported)
        #expect(ContinuationError.Code(.fetch(.cancelled)) == .userCancelled)
    }

    @Test("issue 12: continuation errors are NSErrors as Apple's are: a cancellation is NSUserCancelledError in the Cocoa domain")
    func bridgesToNSError() {
        let cancelled = ContinuationError(.userCancelled, "another continuation started") as Error as NSError
        #expect(cancelled.domain == NSCocoaErrorDomain && cancelled.code == NSUserCancelledError)
        #expect(cancelled.localizedDescription == "another continuation started")
        let expected: [(ContinuationError.Code, CocoaError.Code)] = [
            (.peerGone, .userActivityConnectionUnavailable), (.timedOut, .userActivityRemoteApplicationTimedOut),
            (.appNotAnswering, .userActivityRemoteApplicationTimedOut), (.tooLarge, .userActivityHandoffUserInfoTooLarge),
            (.launchFailed, .userActivityHandoffFailed), (.noApp, .userActivityHandoffFailed),
            // Issue 25 item 4: an app that refused at once is not a timeout.
            (.saveFailed, .userActivityHandoffFailed),
        ]
        for (code, cocoa) in expected {
            let error = ContinuationError(code, "why") as Error as NSError
            #expect(error.domain == NSCocoaErrorDomain && error.code == cocoa.rawValue, "\(code)")
            #expect(error.userInfo[ContinuationError.codeKey] as? String == code.name, "Baton's exact code travels along")
        }
    }

    @Test("every reason the agent sends over the app socket reaches the delegate's error as its code")
    func everyReasonOverTheSocket() async throws {
        let app = BatonApplication()
        for (index, reason) in ContinuationFailure.allCases.enumerated() {
            let id = UInt64(index + 1)
            app.handle(try Self.overTheSocket(.willContinue(continuation: id, activityType: Self.type)))
            app.handle(try Self.overTheSocket(.failed(continuation: id, activityType: Self.type, reason: reason, message: "because \(reason)")))
            let error = try #require(await Self.nextFailure(app.events))
            #expect(error.code == ContinuationError.Code(reason), "\(reason)")
            #expect(error.message == "because \(reason)")
        }
    }

    @Test("protocolViolation from the originating device: its fail, the broker, the app socket, the app's error")
    func protocolViolationEndToEnd() async throws {
        // The originating device answers the fetch with `fail` / protocolViolation (over its in-flight limit, say).
        let sent = SessionMessage.failure(id: 1, reason: .protocolViolation, message: "more than 32 requests in flight")
        let received = try SessionMessage(BinaryPropertyListDecoder.decode(BinaryPropertyListEncoder.encode(sent.propertyList)))
        guard case .failure(_, let reason, let text) = received else {
            Issue.record("read as \(received)")
            return
        }
        // The continuing agent's broker decides what the app hears.
        var broker = HandoffBroker(deviceName: "desktop")
        let notes = HandoffBroker.AppID(1)
        _ = broker.continueAsked(HandoffBroker.ContinuationID(7), route: .app(bundle: "com.example.Notes", activityType: Self.type, running: notes))
        let actions = broker.fetchFailed(HandoffBroker.ContinuationID(7), reason: reason, message: text)
        guard case .tellFailed(notes, let id, let type, let failure, let message) = actions.first else {
            Issue.record("the broker did not tell the app: \(actions)")
            return
        }
        #expect(failure == .fetch(.protocolViolation))
        // The agent sends it over the app socket; the app reads it.
        let app = BatonApplication()
        app.handle(try Self.overTheSocket(.willContinue(continuation: id.value, activityType: type)))
        app.handle(try Self.overTheSocket(.failed(continuation: id.value, activityType: type, reason: failure, message: message)))
        let heard = await Self.nextFailure(app.events)
        #expect(heard?.code == .protocolViolation)
        #expect(heard?.message == "more than 32 requests in flight")
    }

    @Test("a reason this version does not know reads as protocolViolation, not as a string")
    func unknownReason() throws {
        let newer: PropertyList = ["t": "failed", "cont": 1, "type": .string(Self.type), "reason": "quotaExceeded", "message": "m"]
        #expect(try IPCMessage(newer) == .failed(continuation: 1, activityType: Self.type, reason: .fetch(.protocolViolation), message: "m"))
        for reason in ContinuationFailure.allCases {
            #expect(ContinuationFailure(rawValue: reason.rawValue) == reason)
        }
    }
}
