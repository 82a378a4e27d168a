/// When a set notifies observers (section 6.3).
public enum NotifyPolicy: String, Sendable, CaseIterable {
    /// Every set notifies, as KVO does.
    case always
    /// Only a set that changes the value (JSON equality) notifies.
    case onChange
    /// Sets never notify; `POST …/notify` does.
    case manual
}
