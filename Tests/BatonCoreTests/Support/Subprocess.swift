import Foundation

/// Runs a program to completion and returns its exit status and combined output.
/// - Throws: when the program cannot be started (for example, it is not installed).
func run(_ executable: String, _ arguments: [String], input: Data? = nil) throws -> (status: Int32, output: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = [executable] + arguments
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = pipe
    let stdin = Pipe()
    process.standardInput = stdin
    try process.run()
    if let input { stdin.fileHandleForWriting.write(input) }
    try stdin.fileHandleForWriting.close()
    let output = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: output, as: UTF8.self))
}
