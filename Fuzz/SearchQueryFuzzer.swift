// libFuzzer entry point for the search query builder (SEMANTICS G1; issue 15) and the marker of a result's words.
//
// Compiled together with the four BatonSearch files it needs (none imports GRDB) into one module by
// `scripts/fuzz.sh search-query` (not part of the package build: a fuzzer has no `main`). Every input is read as
// UTF-8 (invalid bytes become U+FFFD) and goes through both; a trap, a sanitizer report, or a broken promise stops
// the fuzzer with the input saved. The promises: at most 16 words of at most 64 scalars, each made only of word
// characters; the match expression is exactly those words, each quoted, separated by one space, with a `*` after the
// last one alone and only while it is being typed, so no FTS5 operator, column filter or quote can escape; reading
// the words back from the expression gives the same query; a marked result keeps every scalar of its text, in runs
// that are never empty, and marks only whole words.
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func searchQueryFuzzerTestOneInput(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self)
    checkQuery(text)
    checkTextMarker(text)
    return 0
}

/// TextMarker marks a result's words in Swift: the first line of the input is the query, the rest the text. The
/// highlight keeps every scalar of the text; every marked run is one word the query matches; a snippet's matches
/// are a part of the highlight's.
private func checkTextMarker(_ input: String) {
    let parts = input.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false)
    let query = SearchQuery(String(parts.first ?? ""))
    let text = parts.count > 1 ? String(parts[1]) : ""
    let marker = TextMarker(query)
    let highlight = marker.highlight(text)
    precondition(Array(highlight.plain.unicodeScalars) == Array(text.unicodeScalars), "the highlight lost or changed text")
    precondition(highlight.runs.allSatisfy { !$0.text.isEmpty }, "an empty run")
    for match in highlight.matches {
        precondition(match.unicodeScalars.allSatisfy(SearchQuery.isWordScalar), "a marked run that is not one word")
    }
    let snippet = marker.snippet(text)
    precondition(snippet.matches.count <= highlight.matches.count, "the snippet marks more than the text has")
    precondition(snippet.runs.filter { !$0.isMatch && $0.text != "…" }.count <= TextMarker.snippetWords + 1, "a snippet past its size")
}

private func checkQuery(_ text: String) {
    let query = SearchQuery(text)
    precondition(query.terms.count <= SearchQuery.maximumTerms, "more than \(SearchQuery.maximumTerms) words")
    for term in query.terms {
        precondition(!term.isEmpty, "an empty word")
        precondition(term.unicodeScalars.count <= SearchQuery.maximumTermLength, "a word above the length limit")
        precondition(term.unicodeScalars.allSatisfy(SearchQuery.isWordScalar), "a word with a non-word character")
    }
    precondition(query == SearchQuery(text), "the same text gave two queries")
    guard let expression = query.matchExpression else {
        precondition(query.isEmpty, "words but no match expression")
        return
    }
    precondition(!query.isEmpty, "a match expression without words")
    let expected = query.terms.enumerated().map { index, term in
        (term, index == query.terms.count - 1 && query.lastTermIsPrefix)
    }
    precondition(parse(expression) == expected, "the match expression is not the quoted words: \(expression.debugDescription)")
    // The words joined by spaces are the same query: nothing in a word is a separator.
    precondition(SearchQuery(query.terms.joined(separator: " ")).terms == query.terms, "the words do not read back")
}

/// The words of a match expression as `SearchQuery` promises to write it, with whether each has a `*`; nil
/// (so a failed comparison) for anything else: text outside quotes, an unbalanced quote, two spaces.
private func parse(_ expression: String) -> [(String, Bool)]? {
    var words: [(String, Bool)] = []
    var scalars = Array(expression.unicodeScalars)[...]
    while !scalars.isEmpty {
        if !words.isEmpty {
            guard scalars.first == " " else { return nil }
            scalars = scalars.dropFirst()
        }
        guard scalars.first == "\"" else { return nil }
        scalars = scalars.dropFirst()
        var word = String.UnicodeScalarView()
        while true {
            guard let scalar = scalars.first else { return nil }
            scalars = scalars.dropFirst()
            if scalar == "\"" {
                // A doubled quote is a quote inside the word; a single one ends it.
                if scalars.first == "\"" {
                    word.append("\"")
                    scalars = scalars.dropFirst()
                    continue
                }
                break
            }
            word.append(scalar)
        }
        let prefix = scalars.first == "*"
        if prefix { scalars = scalars.dropFirst() }
        words.append((String(word), prefix))
    }
    return words
}

private func == (lhs: [(String, Bool)]?, rhs: [(String, Bool)]) -> Bool {
    guard let lhs, lhs.count == rhs.count else { return false }
    return zip(lhs, rhs).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
}

