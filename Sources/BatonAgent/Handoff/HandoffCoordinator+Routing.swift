import BatonCore
import BatonRegistry
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Where a state fetched without a route goes (E1–E3): the broker asks, the coordinator reads the state and the
/// router answers.
extension HandoffCoordinator {
    /// Where a state fetched without a route goes, by what it says (E1-E3).
    func routePayload(_ id: HandoffBroker.ContinuationID, _ data: Data) -> HandoffBroker.PayloadRoute {
        let payload: ActivityPayload
        do {
            payload = try ActivityPayload(decoding: data)
        } catch {
            return .failed(app: "", reason: .fetch(.protocolViolation), message: "the state cannot be read: \(error)")
        }
        // The team is known only as part of the advert's keyed hash, which named no app here (else the continuation
        // would have been routed by it): say that, not that the activity has no team (issue 24 part 7).
        guard let host else { return .failed(app: "", reason: .noApp, message: "the agent has stopped") }
        let decision = host.route(
            RouteRequest(activityType: payload.activityType, teamIdentifier: nil, webpageURL: payload.webpageURL, teamMatchedNoApp: true)
        )
        withState { $0.records[id]?.reason = decision.reason }
        switch decision.target {
        case .nothing:
            return .failed(app: "", reason: .noApp, message: "no app on this device continues \(payload.activityType) (D1, D3)")
        case .browser(let browser?, _):
            return .failed(app: browser, reason: .noApp, message: "the default browser app is not connected")
        case .browser(nil, let url):
            return openPage(id, url, title: payload.title)
        case .app(BuiltInBrowser.bundleIdentifier):
            // The built-in browser is never launched (it is the `baton` binary): it gets the page only while its
            // host is connected, as in the case above.
            guard let url = payload.webpageURL else {
                return .failed(app: BuiltInBrowser.bundleIdentifier, reason: .noApp, message: "a web page without its URL")
            }
            return openPage(id, url, title: payload.title)
        case .app(let bundle):
            let type = decision.deliveredActivityType ?? payload.activityType
            var delivered = payload
            if decision.emptiesUserInfo, let url = payload.webpageURL, var web = try? ActivityPayload(activityType: type) {
                // E3: the app receives the page, not the browser's state.
                try? web.setWebpageURL(url)
                web.title = payload.title
                delivered = web
            }
            guard let data = try? delivered.encoded() else {
                return .failed(app: bundle, reason: .fetch(.protocolViolation), message: "the state cannot be encoded again for \(bundle)")
            }
            return .app(bundle: bundle, activityType: type, running: runningApp(bundle), payload: data)
        }
    }

    /// E1, E2 (issue 14): a page no app here continues opens as a new tab in the running browser when the browser
    /// extension's host (the built-in app `org.baton.browser`) is connected to this agent, else through the default
    /// browser (`browserCommand`, xdg-open). The continuation's route says which.
    func openPage(_ id: HandoffBroker.ContinuationID, _ url: URL, title: String?) -> HandoffBroker.PayloadRoute {
        if let running = runningApp(BuiltInBrowser.bundleIdentifier), var page = try? ActivityPayload(activityType: AppRecord.browsingWebActivityType) {
            // Only the page travels on, as E3 gives an app: the URL and the title, no userInfo.
            try? page.setWebpageURL(url)
            page.title = title
            if let data = try? page.encoded() {
                withState { $0.records[id]?.reason += "; the browser extension is connected: a new tab in the running browser (E2)" }
                return .app(bundle: BuiltInBrowser.bundleIdentifier, activityType: AppRecord.browsingWebActivityType, running: running, payload: data)
            }
        }
        do {
            let pid = try Launcher.spawn("/usr/bin/env", arguments: browserCommand + [url.absoluteString], environment: ProcessInfo.processInfo.environment)
            withState {
                _ = $0.spawned.insert(pid)
                $0.records[id]?.reason += "; no browser extension is connected: the default browser (E1)"
            }
            childrenChanged()
        } catch {
            return .failed(app: "browser", reason: .launchFailed, message: "cannot open \(url.absoluteString): \(error)")
        }
        return .opened(app: "browser", message: "opened \(url.absoluteString) in the browser (E1)")
    }
}
