import BatonDBus

#if canImport(Glibc)
    import Glibc
#endif

extension DBusValueError {
    /// sd-bus's refusal (`result`, a negative errno) of `what`: ``DBusValueError/Code/messageFailed``, or `code` when
    /// given (the errno sd-bus returns for a value of the wrong type, say).
    static func sdBus(
        _ what: String,
        _ result: Int32,
        at path: DBusKeyPath? = nil,
        code: Code = .messageFailed
    ) -> DBusValueError {
        DBusValueError(code, "\(what): sd-bus says \(String(cString: strerror(-result)))", at: path)
    }
}
