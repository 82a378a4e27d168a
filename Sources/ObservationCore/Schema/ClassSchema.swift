/// A class: the keys its objects accept, with their types (section 3).
public struct ClassSchema: Sendable, Equatable {
    public let name: String
    /// Property names in the order they were defined.
    public let propertyNames: [String]
    public let properties: [String: PropertySpec]

    /// Parses `{"properties": {...}}`. Key paths inside computed definitions are
    /// checked later against the whole catalogue (see `SchemaCatalog`).
    public init(name: String, definition: JSON) throws(CoreError) {
        try Names.checkID(name, "class name")
        guard case .object(let members) = definition else {
            throw CoreError(.invalidRequest, "a class is {\"properties\": {...}}")
        }
        for key in members.keys where key != "properties" {
            throw CoreError.unknownField(key, in: "class", allowed: ["properties"])
        }
        guard case .object(let definitions)? = members["properties"] else {
            throw CoreError(.invalidRequest, "a class needs 'properties', an object of key → type description")
        }
        var properties: [String: PropertySpec] = [:]
        for (key, definition) in definitions {
            guard Names.isValidKey(key) else {
                throw CoreError(.invalidName, "'\(key)' is not a valid key", details: ["key": .string(key)])
            }
            properties[key] = try PropertySpec(definition, name: key)
        }
        self.name = name
        self.propertyNames = definitions.keys
        self.properties = properties
    }

    /// The stored (not computed) property names.
    public var storedNames: [String] { propertyNames.filter { properties[$0]?.computed == nil } }

    /// The definition as JSON: `{"properties": {...}}`.
    public var json: JSONObject {
        ["properties": .object(JSONObject(propertyNames.map { ($0, .object(properties[$0]?.json ?? [:])) }))]
    }
}
