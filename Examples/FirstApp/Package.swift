// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "Counter",
    dependencies: [
        // Baton from its repository...
        // .package(url: "https://github.com/baton-handoff/baton", branch: "main"),
        // ...or from a clone beside this package. SwiftPM names a path dependency after its folder: "baton" here.
        .package(path: "../baton"),
    ],
    targets: [
        .executableTarget(
            name: "Counter",
            dependencies: [.product(name: "Baton", package: "baton")]
        ),
    ]
)
