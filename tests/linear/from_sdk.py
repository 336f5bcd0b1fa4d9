#!/usr/bin/env python3
"""Linear's GraphQL schema as SDL, derived from the TypeScript types of the npm package @linear/sdk.

Linear publishes no SDL file in a package, but @linear/sdk ships graphql-codegen's TypeScript rendering
of its whole schema (dist/index-*.d.mts). This script turns those declarations back into SDL — only
what the rendering keeps:

- scalars: the keys of `type Scalars = {...}` that are not GraphQL's own;
- enums: `declare enum X { A = "a", ... }` -> `enum X { a ... }` (the string values are the GraphQL names);
- unions: `type X = A | B | ...;`
- interfaces: the types that others intersect with (`type Issue = Node & {...}`), and that have no
  `__typename` of their own;
- object types: `type X = [I & ...] { __typename?: "X"; field: T; ... }`, with each field's arguments
  from `type X<Field>Args = {...}` when that type exists;
- input types: the remaining `{...}` types without `__typename` that are not argument lists.

Type expressions: `Maybe<T>` / `InputMaybe<T>` are nullable, anything else is non-null (`T!`);
`Array<T>` is a list; `Scalars["String"]` is `String`. Descriptions are left out (the file is for
validating documents, not for reading).

Only the types reachable from `Query` and `Mutation` (through fields, arguments, input fields, union
members, interfaces and the implementations of reachable interfaces) are written, sorted by name, so
the output is deterministic for a given package version. The part of the file after the schema (the
SDK's own documents: `...Fragment`, `...Query`, `...Document` types) starts at the first
`type XFragment =` and is not read.

Usage: python3 tests/linear/from_sdk.py package/dist/index-*.d.mts > tests/linear/schema.graphql
"""

import re
import sys

BUILTIN = {"ID", "String", "Boolean", "Int", "Float"}


def declarations(text):
    """Top-level `type` and `declare enum` declarations: (kind, name, body text)."""
    out = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if re.match(r"^type \w+Fragment = ", line):
            break  # the SDK's own documents begin
        m = re.match(r"^(type|declare enum) (\w+)(<[^=]*>)?\s*(=)?\s*(.*)$", line)
        if not m:
            i += 1
            continue
        kind, name = m.group(1), m.group(2)
        body = [m.group(5)]
        # A declaration ends at a line that closes it at column 0 (`};`, `}`) or ends with `;` on its own.
        if kind == "declare enum":
            while not lines[i].startswith("}"):
                i += 1
                body.append(lines[i])
        elif not body[0].rstrip().endswith(";") or body[0].rstrip().endswith("{"):
            while True:
                i += 1
                body.append(lines[i])
                if lines[i].startswith("}") or (lines[i].strip().endswith(";") and not lines[i].startswith(" ")):
                    break
        out.append((kind, name, "\n".join(body)))
        i += 1
    return out


def strip_comments(body):
    return re.sub(r"/\*.*?\*/", "", body, flags=re.S)


def ts_type(expr):
    """A TypeScript field type -> (GraphQL type, nullable)."""
    expr = expr.strip()
    nullable = False
    for wrapper in ("InputMaybe<", "Maybe<"):
        if expr.startswith(wrapper) and expr.endswith(">"):
            expr = expr[len(wrapper):-1].strip()
            nullable = True
            break
    if expr.startswith("Array<") and expr.endswith(">"):
        inner, inner_nullable = ts_type(expr[len("Array<"):-1])
        gql = "[" + inner + ("" if inner_nullable else "!") + "]"
    else:
        m = re.match(r'^Scalars\["(\w+)"\]$', expr)
        gql = m.group(1) if m else expr
        if not re.match(r"^\w+$", gql):
            raise ValueError("cannot read type expression %r" % expr)
    return gql, nullable


def fields_of(body):
    """`name?: T;` members of an object literal body -> [(name, optional, type expression)]."""
    inner = strip_comments(body)
    inner = inner[inner.index("{") + 1 : inner.rindex("}")]
    out = []
    for m in re.finditer(r"^\s*(\w+)(\??):\s*(.+?);\s*$", inner, flags=re.M):
        if m.group(1) == "__typename":
            continue
        out.append((m.group(1), m.group(2) == "?", m.group(3)))
    return out


def main(path):
    text = open(path, encoding="utf-8").read()
    decls = declarations(text)
    scalars, enums, unions, objects, plain = set(), {}, {}, {}, {}
    implements = {}
    for kind, name, body in decls:
        if kind == "declare enum":
            enums[name] = re.findall(r'=\s*"([^"]+)"', body)
        elif name == "Scalars":
            scalars = {n for n, _, _ in fields_of(body)} - BUILTIN
        elif name in ("Maybe", "InputMaybe", "Exact", "MakeOptional", "MakeMaybe", "MakeEmpty", "Incremental"):
            continue
        elif "{" not in body:
            members = [m.strip() for m in body.rstrip(";").split("|") if m.strip()]
            if members and all(re.match(r"^[A-Z]\w*$", m) for m in members):
                unions[name] = members
        else:
            head = body[: body.index("{")]
            interfaces = [p.strip() for p in head.split("&") if p.strip()]
            if not all(re.match(r"^[A-Z]\w*$", p) for p in interfaces):
                continue  # Pick<...>, Omit<...>: not the schema
            if re.search(r'__typename\??:\s*"' + name + '"', body):
                objects[name] = fields_of(body)
                implements[name] = interfaces
            else:
                plain[name] = fields_of(body)
    # Interfaces are what objects intersect with; argument lists are `<Object><Field>Args`.
    interface_names = {i for parts in implements.values() for i in parts}
    args = {}
    for obj, fields in objects.items():
        for field, _, _ in fields:
            key = obj + field[0].upper() + field[1:] + "Args"
            if key in plain:
                args[(obj, field)] = plain[key]
    arg_types = {obj + f[0].upper() + f[1:] + "Args" for obj, f in args}
    interfaces = {n: plain[n] for n in interface_names if n in plain}
    inputs = {n: f for n, f in plain.items() if n not in interfaces and n not in arg_types}

    def refs(fields):
        return [ts_type(t)[0].strip("[]!") for _, _, t in fields]

    implementers = {}
    for obj, parts in implements.items():
        for part in parts:
            implementers.setdefault(part, []).append(obj)
    seen, todo = set(), ["Query", "Mutation"]
    while todo:
        name = todo.pop()
        if name in seen or name in BUILTIN:
            continue
        seen.add(name)
        if name in objects:
            todo += refs(objects[name]) + implements[name]
            for field, _, _ in objects[name]:
                todo += refs(args.get((name, field), []))
        elif name in interfaces:
            todo += refs(interfaces[name]) + implementers.get(name, [])
        elif name in inputs:
            todo += refs(inputs[name])
        elif name in unions:
            todo += unions[name]
        elif name not in scalars and name not in enums:
            raise SystemExit("type %s is referenced but not declared" % name)

    def field_line(obj, name, optional, expr):
        gql, nullable = ts_type(expr)
        line = "  " + name
        arguments = args.get((obj, name))
        if arguments:
            rendered = []
            for a, a_optional, a_expr in arguments:
                a_gql, a_nullable = ts_type(a_expr)
                rendered.append(a + ": " + a_gql + ("" if (a_optional or a_nullable) else "!"))
            line += "(" + ", ".join(rendered) + ")"
        return line + ": " + gql + ("" if (optional or nullable) else "!")

    out = ["# Linear's GraphQL schema, derived by tests/linear/from_sdk.py from @linear/sdk; see README.md.", ""]
    out.append("schema {\n  query: Query\n  mutation: Mutation\n}\n")
    for name in sorted(seen):
        if name in scalars:
            out.append("scalar %s\n" % name)
        elif name in enums:
            out.append("enum %s {\n%s\n}\n" % (name, "\n".join("  " + v for v in enums[name])))
        elif name in unions:
            out.append("union %s = %s\n" % (name, " | ".join(unions[name])))
        elif name in interfaces:
            body = "\n".join(field_line(name, *f) for f in interfaces[name])
            out.append("interface %s {\n%s\n}\n" % (name, body))
        elif name in inputs:
            lines = []
            for f, optional, expr in inputs[name]:
                gql, nullable = ts_type(expr)
                lines.append("  %s: %s%s" % (f, gql, "" if (optional or nullable) else "!"))
            out.append("input %s {\n%s\n}\n" % (name, "\n".join(lines)))
        else:
            head = "type " + name
            if implements[name]:
                head += " implements " + " & ".join(implements[name])
            body = "\n".join(field_line(name, *f) for f in objects[name])
            out.append("%s {\n%s\n}\n" % (head, body))
    sys.stdout.write("\n".join(out))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    main(sys.argv[1])
