module quiver.dev/quiver

go 1.19
