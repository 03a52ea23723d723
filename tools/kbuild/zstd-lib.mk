# zstd 1.5.7's lib (the zstd-sys crate's copy, cp -r .../zstd-sys-2.1.3+zstd.1.5.7/zstd/lib src):
# every .c to an object at -O2, then ar. Used for docs/kbuild.md: make -f zstd-lib.mk -j2
SRCS := $(sort $(wildcard src/common/*.c src/compress/*.c src/decompress/*.c src/deprecated/*.c src/dictBuilder/*.c src/legacy/*.c))
OBJS := $(patsubst src/%.c,obj/%.o,$(SRCS))
CPPFLAGS := -Isrc -Isrc/common -Isrc/legacy -DXXH_NAMESPACE=ZSTD_ -DZSTD_LEGACY_SUPPORT=5 -DZSTD_MULTITHREAD -DZSTD_DISABLE_ASM
CFLAGS := -O2 -Wall
all: libzstd.a
obj/%.o: src/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@
libzstd.a: $(OBJS)
	ar rcs $@ $^
clean:
	rm -rf obj libzstd.a
