/* interpret/demangle.cc - C-callable wrapper around the C++ ABI demangler */
/* SPDX-License-Identifier: MIT */
/*
 * elfutils does not demangle; libstdc++'s abi::__cxa_demangle does. This is
 * the only C++ in interpret/, so programs linking heaptap_interpret link
 * libstdc++ (CMake picks the C++ linker for them).
 */
#include <cstdlib>
#include <cxxabi.h>

extern "C" char *itp_demangle(const char *name);

extern "C" char *itp_demangle(const char *name)
{
	char *out = nullptr;
	int status = -1;

	if (!name || name[0] != '_' || name[1] != 'Z')
		return nullptr;
	try {
		out = abi::__cxa_demangle(name, nullptr, nullptr, &status);
	} catch (...) {
		return nullptr;
	}
	if (status != 0) {
		std::free(out);
		return nullptr;
	}
	return out;
}
