import BatonDBus
import Testing

/// The ``DBusValueError`` `body` throws; nil when it throws nothing (an untyped error is an issue).
func dbusError(_ body: () throws -> Void) -> DBusValueError? {
    do {
        try body()
        return nil
    } catch let error as DBusValueError {
        return error
    } catch {
        Issue.record("untyped error \(error)")
        return nil
    }
}
