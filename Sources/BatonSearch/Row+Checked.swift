import GRDB

extension Row {
    /// The value of `column`, nil when it is NULL or absent; a value of another type is the file's damage, thrown as
    /// ``SearchError/Code/damaged``, never a crash. (GRDB's own subscripts stop the process on a value they cannot
    /// convert, and a hostile or damaged file can hold anything in any column.)
    func checked<Value: DatabaseValueConvertible>(_ column: String, as type: Value.Type = Value.self) throws -> Value? {
        guard let value: DatabaseValue = self[column], !value.isNull else { return nil }
        guard let converted = Value.fromDatabaseValue(value) else {
            throw SearchError(
                .damaged,
                "The search index holds a value of the wrong kind in \(column) (\(value.storage)); run `baton search --rebuild` to start an empty index."
            )
        }
        return converted
    }

    /// As ``checked(_:as:)``, and a missing value is damage too.
    func required<Value: DatabaseValueConvertible>(_ column: String, as type: Value.Type = Value.self) throws -> Value {
        guard let value = try checked(column, as: type) else {
            throw SearchError(.damaged, "The search index has an entry without \(column); run `baton search --rebuild` to start an empty index.")
        }
        return value
    }
}
