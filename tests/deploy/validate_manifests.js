// Validates Kubernetes manifests offline against the real API schemas: Kubernetes' own OpenAPI
// (npm kubernetes-models) and KEDA's CRDs (npm @kubernetes-models/keda), both compiled to ajv
// validators; no cluster, no network. Run from anywhere; its packages come from tests/node_modules
// (`npm ci` in tests/).
//
//   node tests/deploy/validate_manifests.js FILE.yaml [FILE.yaml ...]
//
// Every YAML document of every file must be a known apiVersion/kind, valid against its schema,
// and name no field its schema does not know (kubectl's strict field validation refuses those;
// plain JSON-schema validation of Kubernetes' OpenAPI lets them through). One line per document,
// "ok" or its errors; exits 1 if any document fails, 2 on bad usage.
"use strict";

const fs = require("node:fs");
const path = require("node:path");
const { pathToFileURL } = require("node:url");

const testsDir = path.resolve(__dirname, "..");

// apiVersion's group -> the package holding its models. The core group ("v1") and every
// built-in group are kubernetes-models'.
const kCrdPackages = { "keda.sh": "@kubernetes-models/keda" };

async function loadModel(apiVersion, kind) {
  if (typeof apiVersion !== "string" || typeof kind !== "string" || !/^[A-Za-z0-9]+$/.test(kind))
    throw new Error("apiVersion and kind must be strings");
  const slash = apiVersion.indexOf("/");
  const group = slash < 0 ? "" : apiVersion.slice(0, slash);
  const pkg = kCrdPackages[group] || "kubernetes-models";
  // The packages are ES modules exporting `import` paths only, so found by path, not require.
  const file = path.join(testsDir, "node_modules", pkg, ...apiVersion.split("/"), `${kind}.js`);
  if (!/^[a-z0-9.]*\/?v[0-9a-z]+$/.test(apiVersion) || !fs.existsSync(file))
    throw new Error(`no schema for apiVersion ${apiVersion} kind ${kind} (in ${pkg})`);
  const mod = await import(pathToFileURL(file).href);
  if (typeof mod[kind] !== "function") throw new Error(`${pkg}/${apiVersion} has no ${kind}`);
  return mod[kind];
}

// The validators are ajv's generated code: they read each property their schema knows, and
// enumerate the keys of a map (labels, a ConfigMap's data). Running one on a Proxy that records
// which keys were read or enumerated leaves the unknown fields as the keys never touched.
function watched(value, where, seen) {
  if (value === null || typeof value !== "object") return value;
  const known = new Set();
  seen.push({ value, where, known });
  const children = new Map();
  return new Proxy(value, {
    get(target, key, receiver) {
      if (typeof key !== "string" || !Object.prototype.hasOwnProperty.call(target, key))
        return Reflect.get(target, key, receiver);
      known.add(key);
      if (!children.has(key)) children.set(key, watched(target[key], `${where}/${key}`, seen));
      return children.get(key);
    },
    has(target, key) {
      if (typeof key === "string") known.add(key);
      return Reflect.has(target, key);
    },
    ownKeys(target) {
      for (const k of Object.keys(target)) known.add(k);
      return Reflect.ownKeys(target);
    },
  });
}

function unknownFields(seen) {
  const out = [];
  for (const { value, where, known } of seen) {
    if (Array.isArray(value)) continue;
    for (const k of Object.keys(value)) if (!known.has(k)) out.push(`${where}/${k}: unknown field`);
  }
  return out;
}

function errorLines(err) {
  if (Array.isArray(err && err.errors) && err.errors.length > 0)
    return err.errors.map((e) => `${e.instancePath || "/"}: ${e.message || e.keyword} ${JSON.stringify(e.params || {})}`);
  return [String(err && err.message ? err.message : err)];
}

async function validateDocument(doc) {
  if (doc === null || typeof doc !== "object" || Array.isArray(doc)) return ["not a mapping"];
  let Model;
  try {
    Model = await loadModel(doc.apiVersion, doc.kind);
  } catch (e) {
    return [e.message];
  }
  // The schema's own checks (types, required fields, enums, formats).
  try {
    new Model(doc).validate();
  } catch (e) {
    return errorLines(e);
  }
  // Then the same validator again, watching which fields it knows.
  const seen = [];
  try {
    Model.prototype.validate.call(watched(doc, "", seen));
  } catch (e) {
    return errorLines(e);
  }
  return unknownFields(seen);
}

async function main(files) {
  if (files.length === 0) {
    console.error("usage: node validate_manifests.js FILE.yaml [FILE.yaml ...]");
    return 2;
  }
  const YAML = require(require.resolve("yaml", { paths: [testsDir] }));
  let failed = 0;
  let valid = 0;
  for (const file of files) {
    let docs;
    try {
      docs = YAML.parseAllDocuments(fs.readFileSync(file, "utf8"));
    } catch (e) {
      console.log(`${file}: cannot read: ${e.message}`);
      failed++;
      continue;
    }
    for (let i = 0; i < docs.length; i++) {
      const d = docs[i];
      const label = `${file} document ${i + 1}`;
      if (d.errors.length > 0) {
        console.log(`${label}: YAML: ${d.errors.map((e) => e.message).join("; ")}`);
        failed++;
        continue;
      }
      const obj = d.toJS();
      if (obj === null || obj === undefined) continue;  // an empty document (a trailing ---)
      const errors = await validateDocument(obj);
      const name = `${obj.kind || "?"} ${obj.metadata && obj.metadata.name ? obj.metadata.name : "?"}`;
      if (errors.length === 0) {
        valid++;
        console.log(`${label} (${name}): ok`);
      } else {
        failed++;
        for (const e of errors) console.log(`${label} (${name}): ${e}`);
      }
    }
  }
  if (valid === 0 && failed === 0) {
    console.log("no Kubernetes document found");
    return 1;
  }
  console.log(`${valid} valid, ${failed} invalid`);
  return failed === 0 ? 0 : 1;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (e) => {
    console.error(e && e.stack ? e.stack : String(e));
    process.exit(1);
  },
);
