// Reads a JSON array of PromQL expressions on stdin and writes, for each, what Prometheus's own grammar
// (@prometheus-io/lezer-promql, the parser of Prometheus's web UI) makes of it: the syntax errors, and every
// metric it selects with the function applied to it. cmd/agentrt's TestGrafanaDashboardMetrics runs it:
//   NODE_PATH=$AGENTRT_CACHE/npm-promql/node_modules node names.cjs < exprs.json   (scripts/setup.d/91-promql.sh)
"use strict";
const { parser } = require("@prometheus-io/lezer-promql");

const input = JSON.parse(require("fs").readFileSync(0, "utf8"));
const out = input.map((expr) => {
  const tree = parser.parse(expr);
  const errors = [], selectors = [];
  tree.iterate({
    enter(node) {
      if (node.type.isError) errors.push(`syntax error at ${node.from}: ${JSON.stringify(expr.slice(node.from, node.from + 20))}`);
      if (node.name !== "VectorSelector") return;
      const name = node.node.getChild("Identifier");
      if (!name) return; // {__name__=~...}: the dashboard names its metrics
      // The function the selector is a direct argument of (through a range selector, [5m], if any).
      let fn = "";
      let p = node.node.parent;
      if (p && p.name === "MatrixSelector") p = p.parent;
      if (p && p.name === "FunctionCallBody" && p.parent && p.parent.name === "FunctionCall") {
        const id = p.parent.getChild("FunctionIdentifier");
        fn = id ? expr.slice(id.from, id.to) : "";
      }
      selectors.push({ metric: expr.slice(name.from, name.to), fn });
    },
  });
  return { expr, errors, selectors };
});
process.stdout.write(JSON.stringify(out));
