/// The naming rules of the contract (section 1).
public enum Names {
    /// Object ids, observer names and class names: 1–128 of `A–Z a–z 0–9 . _ ~ -`. (`.` and
    /// `..` are valid, as the contract says; the router never resolves dot-segments.)
    public static func isValidID(_ text: String) -> Bool {
        let utf8 = text.utf8
        guard (1...128).contains(utf8.count) else { return false }
        return utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"),
                UInt8(ascii: "-"):
                true
            default: false
            }
        }
    }

    /// Keys: `^[A-Za-z_][A-Za-z0-9_]{0,127}$`.
    public static func isValidKey(_ text: some StringProtocol) -> Bool {
        let utf8 = text.utf8
        guard let first = utf8.first, (1...128).contains(utf8.count) else { return false }
        guard isLetter(first) || first == UInt8(ascii: "_") else { return false }
        return utf8.allSatisfy { isLetter($0) || isDigit($0) || $0 == UInt8(ascii: "_") }
    }

    /// Notification names: 1–256 characters (Unicode scalars, as JSON Schema counts them), none
    /// of them a control character.
    public static func isValidNotificationName(_ text: String) -> Bool {
        guard (1...256).contains(text.unicodeScalars.count) else { return false }
        return text.unicodeScalars.allSatisfy { !$0.properties.generalCategory.isControl }
    }

    /// Throws `invalidName` unless `text` is a valid id; `what` names it in the message.
    public static func checkID(_ text: String, _ what: String) throws(CoreError) {
        guard isValidID(text) else {
            throw CoreError(
                .invalidName, "invalid \(what) '\(text.prefix(140))': use 1–128 of A–Z a–z 0–9 . _ ~ -",
                details: ["name": .string(String(text.prefix(140)))])
        }
    }

    private static func isLetter(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
    }

    private static func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }
}

extension Unicode.GeneralCategory {
    var isControl: Bool {
        switch self {
        case .control, .format, .surrogate, .unassigned, .lineSeparator, .paragraphSeparator: true
        default: false
        }
    }
}
