import ArgumentParser
import BatonCore
import Foundation

/// `baton plist`: a small `plutil` for the files app developers give Baton (Info.plist, entitlements).
struct PlistCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "plist",
        abstract: "Check, convert and print property lists (binary and XML).",
        discussion: """
            Reads binary (bplist00) and XML property lists with the same strict, bounded codec the agent uses, so a \
            file that passes `baton plist lint` is a file Baton will load. Errors name the file and the line or byte.
            """,
        subcommands: [Lint.self, Convert.self, Print.self]
    )

    struct Lint: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check that files are valid property lists.",
            discussion: "Prints one line per file. Exits 1 if any file is not a valid property list."
        )

        @Argument(help: "The property-list files to check.", completion: .file())
        var files: [String]

        @Flag(name: .shortAndLong, help: "Print only the files that fail.")
        var quiet = false

        func validate() throws {
            guard !files.isEmpty else { throw ValidationError("Name at least one file to check.") }
        }

        func run() throws {
            var failures = 0
            for file in files {
                do {
                    let (value, format) = try readPropertyList(file)
                    if !quiet { print("\(file): OK (\(format), \(value.nodeCount) values)") }
                } catch let error as CommandLineError {
                    failures += 1
                    print(error.description)
                }
            }
            if failures > 0 { throw ExitCode(1) }
        }
    }

    struct Convert: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Convert a property list to binary, XML or JSON.",
            discussion: """
                Without -o the file is replaced in place, as plutil does. Output is written atomically: a crash leaves \
                either the old file or the new one, never half of either. JSON cannot hold data, dates, sets, URLs \
                or UUIDs; converting a file that has them to JSON fails and names the value.
                """
        )

        @Option(name: .shortAndLong, help: "The output format: binary, xml or json.")
        var format: Format

        @Argument(help: "The property list to convert.", completion: .file())
        var file: String

        @Option(name: .short, help: "Where to write the result ('-' for standard output). Default: replace FILE.")
        var output: String?

        enum Format: String, ExpressibleByArgument, CaseIterable {
            case binary, xml, json
            var propertyListFormat: PropertyListFormat {
                switch self {
                case .binary: .binary
                case .xml: .xml
                case .json: .json
                }
            }
        }

        func run() throws {
            let (value, _) = try readPropertyList(file)
            let data: Data
            do {
                data = try value.encoded(as: format.propertyListFormat)
            } catch let error as BatonCoreError {
                throw CommandLineError("\(file): cannot write as \(format.rawValue): \(error)")
            }
            let destination = output ?? file
            if destination == "-" {
                FileHandle.standardOutput.write(data)
                return
            }
            do {
                try data.write(to: URL(fileURLWithPath: destination), options: .atomic)
            } catch {
                throw CommandLineError("\(destination): cannot write: \(error.localizedDescription)")
            }
        }
    }

    struct Print: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print a property list in a readable form, every type visible."
        )

        @Argument(help: "The property list to print.", completion: .file())
        var file: String

        func run() throws {
            let (value, _) = try readPropertyList(file)
            print(value.formattedDescription, terminator: "")
        }
    }
}

/// Reads and decodes a property-list file, turning every failure into a message that names the file.
func readPropertyList(_ path: String) throws -> (PropertyList, PropertyListFormat) {
    let data: Data
    do {
        data = try Data(contentsOf: URL(fileURLWithPath: path))
    } catch {
        let reason = FileManager.default.fileExists(atPath: path) ? "cannot read it" : "no such file"
        throw CommandLineError("\(path): \(reason)")
    }
    do {
        return try PropertyList.decode(data)
    } catch let error as BatonCoreError {
        throw CommandLineError("\(path): \(error)")
    }
}
