module wincon/images/hook-recorder

go 1.22
