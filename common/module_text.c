/* The text a backend compiles for a module (module_text.h). */
#include "module_text.h"

#include <stdlib.h>

char *accel_module_text(const char *prelude, const accel_module_build_t *b,
                        void (*trailer)(FILE *f, const accel_module_build_t *b)) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (!f) return NULL;
  fprintf(f, "#line 1 \"<accel prelude>\"\n%s\n#line 1 \"<row structs>\"\n%s\n", prelude,
          b->params);
  fprintf(f, "#define ACCEL_KERNEL(...)\n#line 1 \"<module>\"\n%s\n", b->source);
  if (trailer) trailer(f, b);
  if (fclose(f) == 0) return text;
  free(text);
  return NULL;
}
