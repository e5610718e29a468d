// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "Counter",
    dependencies: [
        // Baton from its repository (where you cloned it from)...
        // .package(url: "https://git.example.com/you/baton.git", branch: "main"),
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
