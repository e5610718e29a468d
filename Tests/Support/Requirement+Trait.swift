import Testing

extension Trait where Self == ConditionTrait {
    /// Runs the test (or every test of the suite) only where all of `requirements` are met. Where one is not, Swift
    /// Testing reports it as skipped with what it needs and the package that brings it ("needs nginx (apt-get install
    /// nginx-light)"); under `BATON_TEST_REQUIRE_ALL=1` it fails instead, saying the same and why (issue 24).
    public static func requires(_ requirements: Requirement..., sourceLocation: SourceLocation = #_sourceLocation) -> Self {
        .enabled(if: try Requirement.areMet(requirements), Comment(rawValue: Requirement.needs(requirements)), sourceLocation: sourceLocation)
    }
}
