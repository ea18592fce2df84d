package lint

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Every file the repository's docs and comments point at is in the repository: relative Markdown links,
// and paths under docs/ (a Markdown or JSON file) named in any source or document.
func TestReferencedFilesExist(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	mdLink := regexp.MustCompile(`\]\(([^)#:\s]+)(?:#[^)]*)?\)`)
	docPath := regexp.MustCompile(`\bdocs/[A-Za-z0-9_./-]+\.(?:md|json)\b`)
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); p != root && (strings.HasPrefix(n, ".") || n == "bin" || n == "testdata" || n == "build") {
				return filepath.SkipDir
			}
			return nil
		}
		ext := filepath.Ext(p)
		if ext != ".md" && ext != ".go" && ext != ".sh" && ext != ".py" && ext != ".service" && ext != ".socket" {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if ext == ".md" {
			for _, m := range mdLink.FindAllStringSubmatch(string(b), -1) {
				target := filepath.Join(filepath.Dir(p), m[1])
				if _, err := os.Stat(target); err != nil {
					t.Errorf("%s links to %s, which is not in the repository", rel, m[1])
				}
			}
		}
		for _, m := range docPath.FindAllString(string(b), -1) {
			if _, err := os.Stat(filepath.Join(root, m)); err != nil {
				t.Errorf("%s names %s, which is not in the repository", rel, m)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
