// What every app record must be, whichever loader made it: checked by the `bundles` and `desktop-apps` fuzzers
// (scripts/fuzz.sh compiles this file into both). Only activity types an activity can have, each once (D1, B5; A1);
// associated domains that read back as themselves (E3).
func checkClaims(of record: AppRecord) {
    for types in [record.activityTypes, record.documentActivityTypes] {
        precondition(Set(types).count == types.count, "a duplicate activity type")
        for type in types {
            do {
                try ActivityPayload.validateActivityType(type)
            } catch {
                preconditionFailure("\(type.debugDescription) kept, which no activity can have: \(error)")
            }
        }
    }
    for domain in record.associatedDomains {
        precondition(AssociatedDomain(domain.description) == domain, "an associated domain that does not read back: \(domain)")
    }
}
