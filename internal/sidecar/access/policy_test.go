package access

import "testing"

func TestAuthPolicy(t *testing.T) {
	tests := []struct {
		name   string
		pol    Policy
		peer   Peer
		wantOK bool
	}{
		{"owner", Policy{OwnerUID: 1000, Group: -1}, Peer{UID: 1000, GID: 1000}, true},
		{"root", Policy{OwnerUID: 1000, Group: -1}, Peer{UID: 0, GID: 0}, true},
		{"stranger", Policy{OwnerUID: 1000, Group: -1}, Peer{UID: 1001, GID: 1001}, false},
		{"stranger with gid 0 only", Policy{OwnerUID: 1000, Group: -1}, Peer{UID: 1001, GID: 0}, false},
		{"primary group", Policy{OwnerUID: 0, Group: 50}, Peer{UID: 1001, GID: 50}, true},
		{"supplementary group", Policy{OwnerUID: 0, Group: 50}, Peer{UID: 1001, GID: 1001, Groups: []uint32{4, 50}}, true},
		{"other groups", Policy{OwnerUID: 0, Group: 50}, Peer{UID: 1001, GID: 1001, Groups: []uint32{4, 51}}, false},
		{"group 0 configured", Policy{OwnerUID: 1000, Group: 0}, Peer{UID: 1001, GID: 0}, true},
		{"no group configured ignores groups", Policy{OwnerUID: 1000, Group: -1}, Peer{UID: 1001, Groups: []uint32{50}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok, reason := tt.pol.Allow(tt.peer)
			if ok != tt.wantOK {
				t.Fatalf("Allow(%+v) = %v (%s), want %v", tt.peer, ok, reason, tt.wantOK)
			}
			if !ok && reason == "" {
				t.Fatal("a refusal must say why")
			}
		})
	}
}
