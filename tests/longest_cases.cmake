# Read by CTest after the doctest cases are discovered (tests/CMakeLists.txt): the longest
# doctest cases start first. COST is seconds on a 2-core Zen 3 in Release.
set_tests_properties("cli: every example in --help runs" PROPERTIES COST 90)
set_tests_properties("cli: every example in README.md and docs/*.md runs" PROPERTIES COST 80)
set_tests_properties("shipped model: `attn-cli train --no-timing` writes it again" PROPERTIES COST 20)
