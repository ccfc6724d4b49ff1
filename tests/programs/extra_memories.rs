//! Gives the `hostile` adversary's core module what no Rust code can emit: memories beside
//! the main one, and a function that grows them. The guest's stand-in
//! `podstatus_test_extra_memory_grow(memory, pages) -> i32` gets a body of `memory.grow`
//! on the memory it names (1 to `count`), and its export, there only to be found here,
//! is dropped (the component's exports are the world's).

use wasm_encoder::reencode::{Error, Reencode, utils};
use wasm_encoder::{CodeSection, ExportSection, Function, Instruction, MemorySection, MemoryType};

/// The guest's stand-in, by its core export name.
const STAND_IN: &str = "podstatus_test_extra_memory_grow";

/// `core` with `count` empty memories added and the stand-in made to grow them.
pub fn add_extra_memories(core: &[u8], count: u32) -> Vec<u8> {
    let stand_in = stand_in_index(core);
    let mut reencoder = ExtraMemories { count, stand_in, next_defined: imported_functions(core) };
    let mut module = wasm_encoder::Module::new();
    reencoder
        .parse_core_module(&mut module, wasmparser::Parser::new(0), core)
        .unwrap_or_else(|e| panic!("adding memories to the adversary: {e:?}"));
    module.finish()
}

struct ExtraMemories {
    count: u32,
    stand_in: u32,
    /// The index of the next function whose body is read.
    next_defined: u32,
}

impl Reencode for ExtraMemories {
    type Error = std::convert::Infallible;

    fn parse_memory_section(
        &mut self,
        memories: &mut MemorySection,
        section: wasmparser::MemorySectionReader<'_>,
    ) -> Result<(), Error<Self::Error>> {
        utils::parse_memory_section(self, memories, section)?;
        for _ in 0..self.count {
            memories.memory(MemoryType {
                minimum: 0,
                maximum: None,
                memory64: false,
                shared: false,
                page_size_log2: None,
            });
        }
        Ok(())
    }

    fn parse_function_body(
        &mut self,
        code: &mut CodeSection,
        func: wasmparser::FunctionBody<'_>,
    ) -> Result<(), Error<Self::Error>> {
        let index = self.next_defined;
        self.next_defined += 1;
        if index != self.stand_in {
            return utils::parse_function_body(self, code, func);
        }
        // (memory, pages) -> i32: `memory.grow` of memory `memory`, -1 for any other.
        let mut body = Function::new([]);
        for memory in 1..=self.count {
            body.instructions()
                .local_get(0)
                .i32_const(memory as i32)
                .i32_eq()
                .if_(wasm_encoder::BlockType::Empty)
                .local_get(1)
                .memory_grow(memory)
                .return_()
                .end();
        }
        body.instruction(&Instruction::I32Const(-1)).instruction(&Instruction::End);
        code.function(&body);
        Ok(())
    }

    fn parse_export(
        &mut self,
        exports: &mut ExportSection,
        export: wasmparser::Export<'_>,
    ) -> Result<(), Error<Self::Error>> {
        if export.name == STAND_IN {
            return Ok(());
        }
        utils::parse_export(self, exports, export)
    }
}

/// The function index the stand-in is exported under.
fn stand_in_index(core: &[u8]) -> u32 {
    for payload in wasmparser::Parser::new(0).parse_all(core) {
        if let Ok(wasmparser::Payload::ExportSection(exports)) = payload {
            for export in exports.into_iter().flatten() {
                if export.name == STAND_IN && export.kind == wasmparser::ExternalKind::Func {
                    return export.index;
                }
            }
        }
    }
    panic!("the adversary exports no `{STAND_IN}`: the multi-memory attack needs it");
}

/// How many functions the module imports (defined functions are numbered after them).
fn imported_functions(core: &[u8]) -> u32 {
    let mut count = 0;
    for payload in wasmparser::Parser::new(0).parse_all(core) {
        if let Ok(wasmparser::Payload::ImportSection(imports)) = payload {
            for import in imports.into_imports().flatten() {
                if matches!(import.ty, wasmparser::TypeRef::Func(_)) {
                    count += 1;
                }
            }
        }
    }
    count
}
