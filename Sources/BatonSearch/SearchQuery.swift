import Foundation

/// A person's search text turned into an FTS5 query that cannot be a syntax error (issue 15; SEMANTICS G1).
///
/// FTS5's query language has operators (`AND`, `OR`, `NOT`, `NEAR(...)`, `*`, `^`, `-`, column filters, quotes and
/// parentheses); typed by a person they throw syntax errors or change the meaning. Here the text is split into words
/// (runs of letters, digits and combining marks, as FTS5's unicode61 tokenizer sees them), each word is quoted, all
/// must match, and the last one also matches as a prefix while it is being typed (`groc` finds "Groceries"; after
/// `groceries ` with a space the word is finished, and matching it whole is several times cheaper for a short common
/// word, whose prefix would match every longer word that starts with it).
public struct SearchQuery: Sendable, Hashable {
    /// At most this many words are used: a query is a few words, and each one costs an index lookup.
    public static let maximumTerms = 16
    /// A word longer than this is cut: no word in any language is, and the index stores none longer.
    public static let maximumTermLength = 64

    /// The words, in order, without quotes.
    public let terms: [String]
    /// Whether the last word also matches as a prefix: the text does not end in whitespace, so the word may be half
    /// typed.
    public let lastTermIsPrefix: Bool

    /// The words of `text`; none when it has no letters or digits (an empty query matches nothing).
    public init(_ text: String) {
        var terms: [String] = []
        var current = ""
        var currentLength = 0
        func finish() {
            if !current.isEmpty { terms.append(current) }
            current = ""
            currentLength = 0
        }
        for scalar in text.unicodeScalars {
            guard terms.count < Self.maximumTerms else { break }
            if Self.isWordScalar(scalar) {
                if currentLength < Self.maximumTermLength {
                    current.unicodeScalars.append(scalar)
                    currentLength += 1
                }
            } else {
                finish()
            }
        }
        if terms.count < Self.maximumTerms { finish() }
        self.terms = terms
        lastTermIsPrefix = !(text.unicodeScalars.last?.properties.isWhitespace ?? false)
    }

    /// True when nothing can match.
    public var isEmpty: Bool { terms.isEmpty }

    /// The FTS5 MATCH expression: `"word1" "word2"*` (`"word1" "word2"` when ``lastTermIsPrefix`` is false), or nil
    /// when ``isEmpty``.
    public var matchExpression: String? {
        terms.isEmpty ? nil : phrases.joined(separator: " ")
    }

    /// Each word as an FTS5 phrase of its own (the last with `*` while it is being typed): what the query planner
    /// counts matches of (``SearchPlan``). ``matchExpression`` is these, ANDed.
    var phrases: [String] {
        terms.enumerated().map { index, term in
            Self.quoted(term) + (index == terms.count - 1 && lastTermIsPrefix ? "*" : "")
        }
    }

    /// A word in FTS5 string quotes. The words have no quotes (they are not word characters), but doubling them keeps
    /// this safe whatever a future splitter lets through.
    static func quoted(_ term: String) -> String {
        "\"" + term.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// Letters, digits and combining marks: what unicode61 keeps in a token (less private-use characters, which the
    /// index reserves for its match marks).
    static func isWordScalar(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.properties.generalCategory {
        case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter,
            .decimalNumber, .letterNumber, .otherNumber,
            .nonspacingMark, .spacingMark, .enclosingMark:
            return true
        default:
            return false
        }
    }
}
