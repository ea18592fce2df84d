package lint

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// floors are the launch's packages (docs/architecture.md, "Floors") and, for each, the launch packages it
// may import: a package stands only on floors below its own, so that the vocabulary, the records, the
// placements and the shim can never reach back up to the launcher they serve (tailscale's deptest, for the
// same reason: an import the design forbids fails a test, not a review).
var floors = map[string][]string{
	"internal/worker":    nil,
	"internal/records":   {"internal/worker"},
	"internal/placement": {"internal/worker"},
	"internal/workerlog": {"internal/worker"},
	"internal/view":      {"internal/worker"},
	"internal/terminal":  {"internal/worker"},
	"internal/shim":      {"internal/worker", "internal/records", "internal/workerlog"},
	"internal/doctor":    {"internal/worker", "internal/placement"},
	"internal/launcher": {"internal/worker", "internal/records", "internal/placement", "internal/workerlog",
		"internal/view", "internal/terminal", "internal/shim", "internal/doctor"},
}

// Each launch package imports only the launch packages on the floors below it.
func TestLaunchFloors(t *testing.T) {
	const module = "github.com/hlaunch/hlaunch/"
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	pkgs := packages(t)
	for pkg, allowed := range floors {
		files, ok := pkgs[filepath.Join(root, pkg)]
		if !ok {
			t.Errorf("%s: no such package (docs/architecture.md's floors name it)", pkg)
			continue
		}
		for _, f := range files {
			ast, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range ast.Imports {
				path, err := strconv.Unquote(imp.Path.Value)
				if err != nil {
					t.Fatal(err)
				}
				dep, ok := strings.CutPrefix(path, module)
				if _, launch := floors[dep]; !ok || !launch || dep == pkg {
					continue
				}
				if !slices.Contains(allowed, dep) {
					t.Errorf("%s imports %s, which is not on a floor below it (docs/architecture.md, \"Floors\")", f, dep)
				}
			}
		}
	}
}
