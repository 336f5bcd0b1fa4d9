//! A GraphQL document validator against an SDL schema: the subset of the spec's validation rules that
//! catches what goes wrong when a document is written by hand against GitHub's schema (a misspelt
//! field, an argument GitHub does not take, a fragment on the wrong type, a variable of the wrong
//! type), plus the rules GitHub enforces that make a whole request fail (unused fragments, unused
//! variables, connections without `first`/`last` or with more than 100). graphql-parser only parses;
//! the checks are here.
//!
//! Not covered (not needed by hand-written documents this small): field-merging conflicts between
//! equal response names, directive locations, the depth and node limits GitHub computes.

use std::collections::{HashMap, HashSet};

use graphql_parser::Pos;
use graphql_parser::query::{
    self as q, Definition, Directive, OperationDefinition, Selection, SelectionSet, TypeCondition, Value,
};
use graphql_parser::schema::{self as s, TypeDefinition};

/// A type reference: `T`, `[T]`, `T!`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ty {
    Named(String),
    List(Box<Ty>),
    NonNull(Box<Ty>),
}

impl Ty {
    fn from_ast(t: &s::Type<'_, String>) -> Ty {
        match t {
            s::Type::NamedType(n) => Ty::Named(n.clone()),
            s::Type::ListType(inner) => Ty::List(Box::new(Ty::from_ast(inner))),
            s::Type::NonNullType(inner) => Ty::NonNull(Box::new(Ty::from_ast(inner))),
        }
    }

    pub fn named(&self) -> &str {
        match self {
            Ty::Named(n) => n,
            Ty::List(inner) | Ty::NonNull(inner) => inner.named(),
        }
    }

    fn is_non_null(&self) -> bool {
        matches!(self, Ty::NonNull(_))
    }

    fn nullable(&self) -> &Ty {
        match self {
            Ty::NonNull(inner) => inner,
            other => other,
        }
    }
}

impl std::fmt::Display for Ty {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Ty::Named(n) => write!(f, "{n}"),
            Ty::List(inner) => write!(f, "[{inner}]"),
            Ty::NonNull(inner) => write!(f, "{inner}!"),
        }
    }
}

/// An argument of a field or directive, or a field of an input object.
#[derive(Debug, Clone)]
struct InputDef {
    ty: Ty,
    has_default: bool,
}

fn inputs(values: &[s::InputValue<'_, String>]) -> HashMap<String, InputDef> {
    values
        .iter()
        .map(|v| {
            (
                v.name.clone(),
                InputDef { ty: Ty::from_ast(&v.value_type), has_default: v.default_value.is_some() },
            )
        })
        .collect()
}

#[derive(Debug)]
struct FieldDef {
    ty: Ty,
    args: HashMap<String, InputDef>,
}

fn fields(fields: &[s::Field<'_, String>]) -> HashMap<String, FieldDef> {
    fields
        .iter()
        .map(|f| (f.name.clone(), FieldDef { ty: Ty::from_ast(&f.field_type), args: inputs(&f.arguments) }))
        .collect()
}

#[derive(Debug)]
enum Kind {
    Scalar,
    Enum(HashSet<String>),
    Object { fields: HashMap<String, FieldDef>, interfaces: Vec<String> },
    Interface(HashMap<String, FieldDef>),
    Union(Vec<String>),
    InputObject(HashMap<String, InputDef>),
}

/// The schema, reduced to what validation looks up.
pub struct Schema {
    types: HashMap<String, Kind>,
    directives: HashMap<String, HashMap<String, InputDef>>,
    query: String,
    mutation: Option<String>,
}

impl Schema {
    pub fn parse(sdl: &str) -> Result<Schema, String> {
        let doc = graphql_parser::parse_schema::<String>(sdl).map_err(|e| e.to_string())?;
        let mut types = HashMap::new();
        let mut directives = HashMap::new();
        let (mut query, mut mutation) = ("Query".to_string(), None);
        for builtin in ["String", "Int", "Float", "Boolean", "ID"] {
            types.insert(builtin.to_string(), Kind::Scalar);
        }
        let boolean_if = || {
            HashMap::from([(
                "if".to_string(),
                InputDef { ty: Ty::NonNull(Box::new(Ty::Named("Boolean".into()))), has_default: false },
            )])
        };
        directives.insert("skip".to_string(), boolean_if());
        directives.insert("include".to_string(), boolean_if());
        let mut has_mutation_type = false;
        for def in &doc.definitions {
            match def {
                s::Definition::SchemaDefinition(sd) => {
                    if let Some(q) = &sd.query {
                        query = q.clone();
                    }
                    mutation = sd.mutation.clone();
                }
                s::Definition::TypeDefinition(td) => {
                    let (name, kind) = match td {
                        TypeDefinition::Scalar(t) => (&t.name, Kind::Scalar),
                        TypeDefinition::Enum(t) => {
                            (&t.name, Kind::Enum(t.values.iter().map(|v| v.name.clone()).collect()))
                        }
                        TypeDefinition::Object(t) => (
                            &t.name,
                            Kind::Object {
                                fields: fields(&t.fields),
                                interfaces: t.implements_interfaces.clone(),
                            },
                        ),
                        TypeDefinition::Interface(t) => (&t.name, Kind::Interface(fields(&t.fields))),
                        TypeDefinition::Union(t) => (&t.name, Kind::Union(t.types.clone())),
                        TypeDefinition::InputObject(t) => (&t.name, Kind::InputObject(inputs(&t.fields))),
                    };
                    has_mutation_type |= name == "Mutation";
                    types.insert(name.clone(), kind);
                }
                // A refreshed schema that starts using extensions needs them merged here; failing
                // loudly beats validating against half a type.
                s::Definition::TypeExtension(_) => return Err("type extensions are not supported".into()),
                s::Definition::DirectiveDefinition(d) => {
                    directives.insert(d.name.clone(), inputs(&d.arguments));
                }
            }
        }
        if mutation.is_none() && has_mutation_type {
            mutation = Some("Mutation".into());
        }
        if !types.contains_key(&query) {
            return Err(format!("the schema has no query type `{query}`"));
        }
        Ok(Schema { types, directives, query, mutation })
    }

    /// The declared type of `parent.field`, for an object or interface `parent`.
    pub fn field_type(&self, parent: &str, field: &str) -> Option<&Ty> {
        match self.types.get(parent)? {
            Kind::Object { fields, .. } | Kind::Interface(fields) => fields.get(field).map(|f| &f.ty),
            _ => None,
        }
    }

    /// An enum's values, sorted; `None` when `name` is no enum.
    pub fn enum_values(&self, name: &str) -> Option<Vec<&str>> {
        match self.types.get(name)? {
            Kind::Enum(values) => {
                let mut values: Vec<&str> = values.iter().map(String::as_str).collect();
                values.sort_unstable();
                Some(values)
            }
            _ => None,
        }
    }

    pub fn is_composite(&self, name: &str) -> bool {
        matches!(self.types.get(name), Some(Kind::Object { .. } | Kind::Interface(_) | Kind::Union(_)))
    }

    fn is_input(&self, name: &str) -> bool {
        matches!(self.types.get(name), Some(Kind::Scalar | Kind::Enum(_) | Kind::InputObject(_)))
    }

    /// The object types a value of type `name` can be at run time.
    pub fn possible_types<'s>(&'s self, name: &'s str) -> HashSet<&'s str> {
        match self.types.get(name) {
            Some(Kind::Object { .. }) => HashSet::from([name]),
            Some(Kind::Union(members)) => members.iter().map(String::as_str).collect(),
            Some(Kind::Interface(_)) => self
                .types
                .iter()
                .filter(|(_, kind)| implements(kind, name))
                .map(|(n, _)| n.as_str())
                .collect(),
            _ => HashSet::new(),
        }
    }
}

fn implements(kind: &Kind, interface: &str) -> bool {
    matches!(kind, Kind::Object { interfaces, .. } if interfaces.iter().any(|i| i == interface))
}

/// A variable used at a place of type `ty` (an argument, an input field, a directive argument).
struct VarUse {
    name: String,
    ty: Ty,
    location_has_default: bool,
    pos: Pos,
}

/// What walking one selection set found besides errors: the variables it uses and the fragments it
/// spreads (followed per operation, since a fragment's variables are the operation's).
#[derive(Default)]
struct Usage {
    vars: Vec<VarUse>,
    spreads: Vec<String>,
}

struct Validator<'a> {
    schema: &'a Schema,
    fragments: HashMap<&'a str, &'a q::FragmentDefinition<'a, String>>,
    errors: Vec<String>,
}

/// Validates one executable document; the errors are `line:column: message`, empty when it is valid.
pub fn validate(schema: &Schema, source: &str) -> Vec<String> {
    let doc = match graphql_parser::parse_query::<String>(source) {
        Ok(doc) => doc,
        Err(e) => return vec![format!("does not parse: {e}")],
    };
    let mut v = Validator { schema, fragments: HashMap::new(), errors: Vec::new() };
    for def in &doc.definitions {
        if let Definition::Fragment(f) = def
            && v.fragments.insert(&f.name, f).is_some()
        {
            v.error(f.position, format!("fragment `{}` is defined twice", f.name));
        }
    }

    let mut fragment_usage: HashMap<&str, Usage> = HashMap::new();
    for def in &doc.definitions {
        if let Definition::Fragment(f) = def {
            let TypeCondition::On(on) = &f.type_condition;
            let mut usage = Usage::default();
            if v.schema.is_composite(on) {
                v.check_directives(&f.directives, &mut usage);
                v.check_selection_set(on, &f.selection_set, &mut usage);
            } else {
                v.error(
                    f.position,
                    format!(
                        "fragment `{}` is on `{on}`, which is not an object, interface or union type",
                        f.name
                    ),
                );
            }
            fragment_usage.insert(&f.name, usage);
        }
    }

    let schema = v.schema;
    let mut used_fragments: HashSet<String> = HashSet::new();
    let mut operation_names = HashSet::new();
    for def in &doc.definitions {
        let Definition::Operation(op) = def else { continue };
        let (root, name, var_defs, directives, selection_set, pos) = match op {
            OperationDefinition::SelectionSet(set) => {
                (Some(&schema.query), None, &[][..], &[][..], set, set.span.0)
            }
            OperationDefinition::Query(o) => (
                Some(&schema.query),
                o.name.as_ref(),
                &o.variable_definitions[..],
                &o.directives[..],
                &o.selection_set,
                o.position,
            ),
            OperationDefinition::Mutation(o) => (
                schema.mutation.as_ref(),
                o.name.as_ref(),
                &o.variable_definitions[..],
                &o.directives[..],
                &o.selection_set,
                o.position,
            ),
            OperationDefinition::Subscription(o) => (
                None,
                o.name.as_ref(),
                &o.variable_definitions[..],
                &o.directives[..],
                &o.selection_set,
                o.position,
            ),
        };
        let label = name.map_or("the anonymous operation".to_string(), |n| format!("operation `{n}`"));
        if let Some(n) = name
            && !operation_names.insert(n.clone())
        {
            v.error(pos, format!("{label} is defined twice"));
        }
        let Some(root) = root else {
            v.error(pos, format!("{label}: the schema has no root type for this kind of operation"));
            continue;
        };

        let mut declared: HashMap<&str, (&q::VariableDefinition<'_, String>, Ty)> = HashMap::new();
        for var in var_defs {
            let ty = Ty::from_ast(&var.var_type);
            if !v.schema.is_input(ty.named()) {
                v.error(
                    var.position,
                    format!("variable `${}` has type `{ty}`, which is not an input type", var.name),
                );
            }
            if declared.insert(&var.name, (var, ty)).is_some() {
                v.error(var.position, format!("variable `${}` is declared twice", var.name));
            }
        }

        let mut usage = Usage::default();
        v.check_directives(directives, &mut usage);
        v.check_selection_set(root, selection_set, &mut usage);
        // The operation's variables include those of every fragment it reaches.
        let mut uses: Vec<&VarUse> = usage.vars.iter().collect();
        let mut reached: HashSet<&str> = HashSet::new();
        let mut queue: Vec<&str> = usage.spreads.iter().map(String::as_str).collect();
        while let Some(f) = queue.pop() {
            if !reached.insert(f) {
                continue;
            }
            if let Some(u) = fragment_usage.get(f) {
                uses.extend(u.vars.iter());
                queue.extend(u.spreads.iter().map(String::as_str));
            }
        }
        used_fragments.extend(reached.iter().map(|f| f.to_string()));

        let mut used_vars = HashSet::new();
        for u in uses {
            used_vars.insert(u.name.as_str());
            match declared.get(u.name.as_str()) {
                None => v.error(u.pos, format!("variable `${}` is not declared by {label}", u.name)),
                Some((def, var_ty)) => {
                    let var_has_default = def.default_value.is_some();
                    if !usable_at(var_ty, var_has_default, &u.ty, u.location_has_default) {
                        v.error(
                            u.pos,
                            format!(
                                "variable `${}` of type `{var_ty}` is used where `{}` is expected",
                                u.name, u.ty
                            ),
                        );
                    }
                }
            }
        }
        for var in var_defs {
            if !used_vars.contains(var.name.as_str()) {
                v.error(
                    var.position,
                    format!("variable `${}` is declared by {label} but not used", var.name),
                );
            }
        }
    }

    for def in &doc.definitions {
        if let Definition::Fragment(f) = def
            && !used_fragments.contains(&f.name)
        {
            v.error(f.position, format!("fragment `{}` is defined but not used", f.name));
        }
    }
    v.errors
}

/// The spec's "All Variable Usages Are Allowed": a nullable variable fits a non-null place only when
/// one of them has a default.
fn usable_at(var: &Ty, var_has_default: bool, location: &Ty, location_has_default: bool) -> bool {
    if let (Ty::NonNull(inner), false) = (location, var.is_non_null()) {
        return (var_has_default || location_has_default) && compatible(var, inner);
    }
    compatible(var, location)
}

fn compatible(var: &Ty, location: &Ty) -> bool {
    match (var, location) {
        (Ty::NonNull(v), Ty::NonNull(l)) => compatible(v, l),
        (_, Ty::NonNull(_)) => false,
        (Ty::NonNull(v), l) => compatible(v, l),
        (Ty::List(v), Ty::List(l)) => compatible(v, l),
        (Ty::Named(v), Ty::Named(l)) => v == l,
        _ => false,
    }
}

impl<'a> Validator<'a> {
    fn error(&mut self, pos: Pos, message: String) {
        self.errors.push(format!("{}:{}: {message}", pos.line, pos.column));
    }

    fn check_selection_set(&mut self, parent: &str, set: &'a SelectionSet<'a, String>, usage: &mut Usage) {
        for item in &set.items {
            match item {
                Selection::Field(field) => self.check_field(parent, field, usage),
                Selection::FragmentSpread(spread) => {
                    self.check_directives(&spread.directives, usage);
                    let Some(fragment) = self.fragments.get(spread.fragment_name.as_str()).copied() else {
                        self.error(
                            spread.position,
                            format!("fragment `{}` is not defined", spread.fragment_name),
                        );
                        continue;
                    };
                    let TypeCondition::On(on) = &fragment.type_condition;
                    self.check_overlap(parent, on, spread.position);
                    usage.spreads.push(spread.fragment_name.clone());
                }
                Selection::InlineFragment(inline) => {
                    self.check_directives(&inline.directives, usage);
                    let on = match &inline.type_condition {
                        Some(TypeCondition::On(on)) => on.as_str(),
                        None => parent,
                    };
                    if !self.schema.types.contains_key(on) {
                        self.error(inline.position, format!("type `{on}` does not exist"));
                        continue;
                    }
                    if !self.schema.is_composite(on) {
                        self.error(
                            inline.position,
                            format!("`{on}` is not an object, interface or union type"),
                        );
                        continue;
                    }
                    self.check_overlap(parent, on, inline.position);
                    self.check_selection_set(on, &inline.selection_set, usage);
                }
            }
        }
    }

    /// A fragment on `on` inside a selection on `parent` must be able to apply to some object.
    fn check_overlap(&mut self, parent: &str, on: &str, pos: Pos) {
        let parents = self.schema.possible_types(parent);
        if !self.schema.possible_types(on).iter().any(|t| parents.contains(t)) {
            self.error(pos, format!("a fragment on `{on}` can never apply inside `{parent}`"));
        }
    }

    fn check_field(&mut self, parent: &str, field: &'a q::Field<'a, String>, usage: &mut Usage) {
        self.check_directives(&field.directives, usage);
        if field.name == "__typename" {
            if !field.arguments.is_empty() || !field.selection_set.items.is_empty() {
                self.error(field.position, "`__typename` takes no arguments and no selection".into());
            }
            return;
        }
        let schema = self.schema;
        let def = match schema.types.get(parent) {
            Some(Kind::Object { fields, .. } | Kind::Interface(fields)) => fields.get(field.name.as_str()),
            Some(Kind::Union(_)) => {
                self.error(
                    field.position,
                    format!("`{parent}` is a union: select `{}` inside `... on TYPE`", field.name),
                );
                return;
            }
            _ => None,
        };
        let Some(def) = def else {
            self.error(field.position, format!("field `{}` does not exist on type `{parent}`", field.name));
            return;
        };

        self.check_arguments(
            &format!("field `{parent}.{}`", field.name),
            &def.args,
            &field.arguments,
            field.position,
            usage,
        );

        let output = def.ty.named();
        if output.ends_with("Connection") && def.args.contains_key("first") {
            self.check_page_size(field);
        }
        let selected = !field.selection_set.items.is_empty();
        if schema.is_composite(output) {
            if !selected {
                self.error(
                    field.position,
                    format!("field `{}` is of type `{output}` and needs a selection", field.name),
                );
            }
            self.check_selection_set(output, &field.selection_set, usage);
        } else if selected {
            self.error(
                field.position,
                format!("field `{}` is a leaf (`{}`) and takes no selection", field.name, def.ty),
            );
        }
    }

    /// GitHub's own rule on connections: `first` or `last` is required and at most 100, else the whole
    /// request fails ("You must provide a `first` or `last` value to properly paginate").
    fn check_page_size(&mut self, field: &q::Field<'a, String>) {
        let sizes: Vec<&Value<'a, String>> = field
            .arguments
            .iter()
            .filter(|(name, _)| name == "first" || name == "last")
            .map(|(_, v)| v)
            .collect();
        if sizes.is_empty() {
            self.error(field.position, format!("connection `{}` needs `first` or `last`", field.name));
        }
        for size in sizes {
            if let Value::Int(n) = size
                && !(1..=100).contains(&n.as_i64().unwrap_or(0))
            {
                self.error(
                    field.position,
                    format!("connection `{}`: page size {size} is not 1 to 100", field.name),
                );
            }
        }
    }

    fn check_directives(&mut self, directives: &'a [Directive<'a, String>], usage: &mut Usage) {
        let schema = self.schema;
        for d in directives {
            match schema.directives.get(d.name.as_str()) {
                None => self.error(d.position, format!("directive `@{}` does not exist", d.name)),
                Some(args) => self.check_arguments(
                    &format!("directive `@{}`", d.name),
                    args,
                    &d.arguments,
                    d.position,
                    usage,
                ),
            }
        }
    }

    fn check_arguments(
        &mut self,
        what: &str,
        defs: &HashMap<String, InputDef>,
        given: &'a [(String, Value<'a, String>)],
        pos: Pos,
        usage: &mut Usage,
    ) {
        let mut seen = HashSet::new();
        for (name, value) in given {
            if !seen.insert(name.as_str()) {
                self.error(pos, format!("{what}: argument `{name}` is given twice"));
            }
            match defs.get(name) {
                None => self.error(pos, format!("{what} has no argument `{name}`")),
                Some(def) => self.check_value(&format!("{what}, argument `{name}`"), value, def, pos, usage),
            }
        }
        for (name, def) in defs {
            if def.ty.is_non_null() && !def.has_default && !seen.contains(name.as_str()) {
                self.error(pos, format!("{what}: required argument `{name}` is missing"));
            }
        }
    }

    /// A literal or variable given where `def` is expected (argument, input field, list item).
    fn check_value(
        &mut self,
        what: &str,
        value: &'a Value<'a, String>,
        def: &InputDef,
        pos: Pos,
        usage: &mut Usage,
    ) {
        let ty = &def.ty;
        if let Value::Variable(name) = value {
            usage.vars.push(VarUse {
                name: name.clone(),
                ty: ty.clone(),
                location_has_default: def.has_default,
                pos,
            });
            return;
        }
        if let Value::Null = value {
            if ty.is_non_null() {
                self.error(pos, format!("{what}: null given for `{ty}`"));
            }
            return;
        }
        match (ty.nullable(), value) {
            (Ty::List(item), Value::List(items)) => {
                let item = InputDef { ty: (**item).clone(), has_default: false };
                for v in items {
                    self.check_value(what, v, &item, pos, usage);
                }
            }
            // Input coercion: a single value stands for a list of one.
            (Ty::List(item), v) => {
                let item = InputDef { ty: (**item).clone(), has_default: false };
                self.check_value(what, v, &item, pos, usage)
            }
            (Ty::Named(_), Value::List(_)) => self.error(pos, format!("{what}: a list given for `{ty}`")),
            (Ty::Named(name), v) => self.check_named_value(what, name, v, pos, usage),
            (Ty::NonNull(_), _) => self.error(pos, format!("{what}: malformed type `{ty}` in the schema")),
        }
    }

    fn check_named_value(
        &mut self,
        what: &str,
        name: &str,
        value: &'a Value<'a, String>,
        pos: Pos,
        usage: &mut Usage,
    ) {
        let schema = self.schema;
        match (schema.types.get(name), value) {
            (Some(Kind::InputObject(field_defs)), Value::Object(given)) => {
                for (field, v) in given {
                    match field_defs.get(field) {
                        None => {
                            self.error(pos, format!("{what}: input type `{name}` has no field `{field}`"))
                        }
                        Some(def) => {
                            self.check_value(&format!("{what}, field `{field}`"), v, def, pos, usage)
                        }
                    }
                }
                for (field, def) in field_defs {
                    if def.ty.is_non_null() && !def.has_default && !given.contains_key(field) {
                        self.error(pos, format!("{what}: required field `{field}` of `{name}` is missing"));
                    }
                }
            }
            (Some(Kind::Enum(values)), Value::Enum(v)) => {
                if !values.contains(v) {
                    self.error(pos, format!("{what}: `{v}` is not a value of enum `{name}`"));
                }
            }
            (Some(Kind::Scalar), v) => {
                let fits = match (name, v) {
                    ("Int", Value::Int(_)) => true,
                    ("Float", Value::Int(_) | Value::Float(_)) => true,
                    ("String", Value::String(_)) => true,
                    ("Boolean", Value::Boolean(_)) => true,
                    ("ID", Value::String(_) | Value::Int(_)) => true,
                    ("Int" | "Float" | "String" | "Boolean" | "ID", _) => false,
                    // A custom scalar (DateTime, URI, GitObjectID…) defines its own literals.
                    _ => !matches!(v, Value::Object(_) | Value::Enum(_)),
                };
                if !fits {
                    self.error(pos, format!("{what}: {v} is not a `{name}`"));
                }
            }
            (None, _) => self.error(pos, format!("{what}: type `{name}` does not exist")),
            (Some(_), v) => self.error(pos, format!("{what}: {v} is not a `{name}`")),
        }
    }
}
