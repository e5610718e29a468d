import BatonCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What `baton browser-host` makes of the browser's messages (issue 14): the focused tab of the focused window is the
/// device's current activity (A9), a private window or a page that is not http(s) never is (A5), and no focus or the
/// browser quitting resigns it.
///
/// A pure state machine: one `mutating func` per input, a small action out; the host does the I/O. The checks are
/// made here even though the extension makes them too: the host trusts no browser to have filtered.
public struct BrowserFocus: Sendable {
    /// What the host does next.
    public enum Action: Sendable, Hashable {
        /// Make this page current, or update the current one to it (same activity, new URL and title).
        case show(url: URL, title: String)
        /// Resign the current page, saying why.
        case resign(reason: String)
        /// Nothing changes (the same page again, or nothing shown and nothing to show); `reason` for the log, if any.
        case keep(reason: String?)
    }

    private enum State: Sendable, Hashable {
        case idle
        case showing(url: URL, title: String)
        case ended
    }

    private var state = State.idle

    /// Nothing shown yet.
    public init() {}

    /// Whether a page is being shown.
    public var isShowing: Bool {
        switch state {
        case .showing: true
        case .idle, .ended: false
        }
    }

    /// The browser sent `message`.
    public mutating func received(_ message: BrowserMessage) -> Action {
        switch (state, message) {
        case (.ended, _):
            return .keep(reason: "the browser's input has ended")
        case (_, .none):
            return hide("no browser window has focus")
        case (_, .tab(_, _, true)):
            return hide("the focused tab is in a private window, which is never advertised")
        case (.idle, .tab(let text, let title, false)), (.showing, .tab(let text, let title, false)):
            guard let url = URL(string: text), (try? ActivityPayload.validateWebpageURL(url)) != nil else {
                let scheme = text.prefix { $0 != ":" }.prefix(32)
                return hide("the focused tab shows a page that is not http or https (\(scheme):), which is never advertised (A5)")
            }
            if case .showing(let shownURL, let shownTitle) = state, shownURL == url, shownTitle == title {
                return .keep(reason: nil)
            }
            state = .showing(url: url, title: title)
            return .show(url: url, title: title)
        }
    }

    /// A message could not be read: what the focused tab is is unknown, so nothing is advertised.
    public mutating func unreadable(_ error: BatonProtocolError) -> Action {
        hide("a message from the browser could not be read: \(error)")
    }

    /// The browser's input ended (the browser quit or disconnected the host).
    public mutating func ended() -> Action {
        let wasShowing = isShowing
        state = .ended
        return wasShowing ? .resign(reason: "the browser quit") : .keep(reason: "the browser quit")
    }

    private mutating func hide(_ reason: String) -> Action {
        switch state {
        case .showing:
            state = .idle
            return .resign(reason: reason)
        case .idle, .ended:
            return .keep(reason: reason)
        }
    }
}
