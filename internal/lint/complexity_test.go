package lint

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"path/filepath"
	"slices"
	"testing"
)

// maxComplexity is the cyclomatic complexity a function of the module's non-test code may have. Past it
// a function holds more paths than a reader keeps in mind at once: split it into named steps, as
// profile.Compose is.
const maxComplexity = 20

// complexityExceptions are the functions over maxComplexity today, each with its complexity as its own
// ceiling: they may shrink, not grow. A function is named as gocyclo names it, without its package
// ("(*Spec).validateLexical", "csiPasses"), so that moving it to another package keeps its entry. An entry whose
// function has gone or come down to maxComplexity is removed from the list.
var complexityExceptions = map[string]int{
	"Validate":                37, // internal/schematest: a JSON Schema subset
	"csiPasses":               31, // internal/termfilter: one case per allowed CSI sequence
	"ParseToken":              29, // internal/fingerprint: one check per token field
	"(*Spec).validateLexical": 28, // internal/nsenv/sandbox
	"(*specFlags).apply":      27, // cmd/hlaunch: one branch per flag
	"(*sidecarFlags).run":     23, // cmd/hlaunch-sidecar
	"(*Server).poll":          22, // internal/sidecar
	"(Tree).Signal":           22, // internal/pidsignal
	"(*Spec).buildView":       22, // internal/nsenv/sandbox
	"ParseSize":               22, // internal/cgroup
	"(*Group).Stats":          22, // internal/cgroup: one branch per v1/v2 stat file
	"(*Host).create":          21, // internal/cgroup
	"(*Group).applyLimits":    21, // internal/cgroup: one branch per limit and hierarchy
}

// TestComplexityCeiling fails a function of non-test code whose cyclomatic complexity is over
// maxComplexity (or over its own entry in complexityExceptions).
func TestComplexityCeiling(t *testing.T) {
	seen := map[string]int{}
	for _, files := range packages(t) {
		for _, f := range files {
			af, err := parser.ParseFile(token.NewFileSet(), f, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range af.Decls {
				fn, ok := d.(*ast.FuncDecl)
				if !ok || fn.Body == nil {
					continue
				}
				name, c := funcName(fn), complexity(fn)
				if c <= maxComplexity {
					continue
				}
				limit, excepted := complexityExceptions[name]
				seen[name] = max(seen[name], c)
				switch {
				case !excepted:
					t.Errorf("%s: %s has cyclomatic complexity %d, over %d: split it into named steps", filepath.Base(f), name, c, maxComplexity)
				case c > limit:
					t.Errorf("%s: %s has cyclomatic complexity %d, over its ceiling %d: split it into named steps", filepath.Base(f), name, c, limit)
				}
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(complexityExceptions)) {
		if _, ok := seen[name]; !ok {
			t.Errorf("complexityExceptions lists %s, which is gone or no longer over %d: remove its entry", name, maxComplexity)
		}
	}
}

// TestComplexityCounts pins the counter to gocyclo's rules on a function of known complexity.
func TestComplexityCounts(t *testing.T) {
	src := `package p
func f(a, b bool, xs []int, ch chan int) int {
	if a && b || !a { // if, &&, ||
	}
	for i := 0; i < 1; i++ { // for
	}
	for range xs { // range
	}
	switch { // two cases; default is not a path of its own
	case a:
	case b:
	default:
	}
	select { // one comm clause; default is not counted
	case <-ch:
	default:
	}
	g := func() { if b {} } // a function literal's paths are its enclosing function's
	g()
	return 0
}`
	af, err := parser.ParseFile(token.NewFileSet(), "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	if c := complexity(af.Decls[0].(*ast.FuncDecl)); c != 10 {
		t.Fatalf("complexity = %d, want 10", c)
	}
}

// complexity is fn's cyclomatic complexity as gocyclo counts it: one, plus one for each if, for, range,
// non-default case and comm clause, && and ||.
func complexity(fn *ast.FuncDecl) int {
	c := 1
	ast.Inspect(fn, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.IfStmt, *ast.ForStmt, *ast.RangeStmt:
			c++
		case *ast.CaseClause:
			if n.List != nil {
				c++
			}
		case *ast.CommClause:
			if n.Comm != nil {
				c++
			}
		case *ast.BinaryExpr:
			if n.Op == token.LAND || n.Op == token.LOR {
				c++
			}
		}
		return true
	})
	return c
}

// funcName names fn as gocyclo does: "F", or "(T).M" and "(*T).M" for a method.
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	return "(" + recvType(fn.Recv.List[0].Type) + ")." + fn.Name.Name
}

// recvType prints a receiver's type: T, *T, or T without its type parameters.
func recvType(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return "*" + recvType(e.X)
	case *ast.IndexExpr:
		return recvType(e.X)
	case *ast.IndexListExpr:
		return recvType(e.X)
	case *ast.Ident:
		return e.Name
	}
	return "?"
}
