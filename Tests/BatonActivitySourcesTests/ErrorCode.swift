import BatonActivitySources
import Testing

/// The code of the ``ActivitySourceError`` `body` throws; nil when it throws nothing (an untyped error is an issue).
func errorCode(_ body: () throws -> Void) -> ActivitySourceError.Code? {
    do {
        try body()
        return nil
    } catch let error as ActivitySourceError {
        return error.code
    } catch {
        Issue.record("untyped error \(error)")
        return nil
    }
}
