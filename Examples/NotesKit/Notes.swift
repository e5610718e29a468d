import Baton
import Foundation

// Notes: a document-based example app (SEMANTICS B4-B6, C9). Where ShopSnap is written with Apple's names as its
// tutorial is, Notes uses Baton's own: `ActivityDocument`, `UserActivity`, `BatonApplicationDelegate`.

/// Notes' bundle identifier, as in Examples/Notes.app/Info.plist.
public let notesBundleIdentifier = "org.baton.Notes"
/// The `NSUbiquitousDocumentUserActivityType` every Notes document type declares (B5).
public let notesActivityType = "org.baton.notes.editing"
/// The `userInfo` key of the current line (an integer, from 1).
public let notesLineKey = "org.baton.notes.line"
/// The document types of Examples/Notes.app/Info.plist, by extension (B5): what `notes` uses when it cannot read
/// its bundle's (run from a shell, say). Two types share the one activity type.
public let notesDocumentActivityTypes = ["note": notesActivityType, "txt": notesActivityType, "md": notesActivityType]
