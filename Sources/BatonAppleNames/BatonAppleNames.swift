// `BatonAppleNames`: Apple's names for Baton's Handoff types, opt-in (issue 12 part 3), so that cross-platform code
// reads
//
//     #if canImport(UIKit)
//     import UIKit
//     #else
//     import Baton
//     import BatonAppleNames
//     #endif
//
// Exactly the Handoff and search names and nothing else: views, windows and controllers stay the app's business.
@_exported import Baton

/// `UIApplication` / `NSApplication`: the app's link to its agent. `BatonApplication.shared` is `UIApplication.shared`.
public typealias UIApplication = BatonApplication
public typealias NSApplication = BatonApplication

/// `UIApplicationDelegate` / `NSApplicationDelegate`: the continuation methods with Apple's exact signatures.
public typealias UIApplicationDelegate = BatonApplicationDelegate
public typealias NSApplicationDelegate = BatonApplicationDelegate

/// `UIResponder` / `NSResponder`: `userActivity`, `updateUserActivityState(_:)`, `restoreUserActivityState(_:)`.
public typealias UIResponder = NSUserActivityResponder
public typealias NSResponder = NSUserActivityResponder

/// What `restorationHandler` takes.
public typealias UIUserActivityRestoring = UserActivityRestoring
public typealias NSUserActivityRestoring = UserActivityRestoring

/// What a search result shows for an activity.
public typealias CSSearchableItemAttributeSet = SearchableItemAttributeSet

/// The activity type of an activity continued from a search result (G2).
public let CSSearchableItemActionType = "com.apple.corespotlightitem"
/// The `userInfo` key holding the searchable item's identifier in such an activity.
public let CSSearchableItemActivityIdentifier = "kCSSearchableItemActivityIdentifier"
