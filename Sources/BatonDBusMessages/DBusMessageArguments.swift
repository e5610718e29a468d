import BatonDBus

/// What ``DBusMessageReader`` read from a message: its arguments, and the file descriptors its `h` values index.
public struct DBusMessageArguments: Sendable {
    /// The arguments, in order.
    public var values: [DBusValue]
    /// The descriptors the arguments' `h` values carried, duplicated: ``DBusValue/unixFD(_:)`` indexes them.
    public let descriptors: DBusFileDescriptors

    /// `values`, with `descriptors` for their `h` values.
    public init(_ values: [DBusValue], descriptors: DBusFileDescriptors = DBusFileDescriptors()) {
        self.values = values
        self.descriptors = descriptors
    }
}
