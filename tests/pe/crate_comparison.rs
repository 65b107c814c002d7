//! Parses every file given on the command line with goblin (strict and
//! permissive), object and pelite; prints one TSV line per file:
//! path, goblin, goblin_permissive, object_file, object_pe, pelite.
//! Each cell: "ok sec=N imp=N ord=N exp=N rich=N dd=N rel=N" (a field that
//! failed is "field=E:<error>") or "err: <error>".
//!
//! Scratch project (outside the repository):
//!   cargo new pecmp && cd pecmp && cargo add goblin@0.10.7 object@0.40.0 pelite@0.10.0
//!   cp .../tests/pe/crate_comparison.rs src/main.rs && cargo build --release
//!   cd tests/golden/pe && .../pecmp $(find . -type f | sort | sed 's|^./||') > /tmp/pecmp.tsv
use std::fmt::Write as _;

fn clean(s: String) -> String {
    s.replace(['\t', '\n'], " ").chars().take(90).collect()
}

fn goblin_cell(data: &[u8], permissive: bool) -> String {
    use goblin::pe::{options::ParseOptions, PE};
    let mut opts = ParseOptions::default();
    if permissive {
        opts = opts.with_parse_mode(goblin::pe::options::ParseMode::Permissive);
    }
    match PE::parse_with_opts(data, &opts) {
        Err(e) => format!("err: {}", clean(e.to_string())),
        Ok(pe) => {
            let ord = pe.imports.iter().filter(|i| i.name.starts_with("ORDINAL ")).count();
            let rich = pe.header.rich_header.map(|r| r.metadatas().count()).unwrap_or(0);
            let dd = pe.header.optional_header.map(|o| {
                format!("{}/nz{}", o.data_directories.data_directories.len(),
                        o.data_directories.data_directories.iter().filter(|d| d.is_some()).count())
            }).unwrap_or_else(|| "none".into());
            let rel = pe.relocation_data.as_ref().map(|r| r.blocks().count()).unwrap_or(0);
            format!("ok sec={} imp={} ord={} exp={} rich={} dd={} rel={}", pe.sections.len(),
                    pe.imports.len(), ord, pe.exports.len(), rich, dd, rel)
        }
    }
}

fn object_file_cell(data: &[u8]) -> String {
    use object::{Object, ObjectSection};
    match object::File::parse(data) {
        Err(e) => format!("err: {}", clean(e.to_string())),
        Ok(f) => {
            let imps = f.imports().map(|v| v.count().to_string()).unwrap_or_else(|e| format!("E:{}", clean(e.to_string())));
            let exps = f.exports().map(|v| v.count().to_string()).unwrap_or_else(|e| format!("E:{}", clean(e.to_string())));
            let secs = f.sections().filter(|s| s.data().is_ok()).count();
            format!("ok {:?} sec={} imp={} exp={}", f.format(), secs, imps, exps)
        }
    }
}

fn object_pe<Pe: object::read::pe::ImageNtHeaders>(data: &[u8]) -> String {
    use object::read::pe::{Import, PeFile};
    let f = match PeFile::<Pe>::parse(data) {
        Err(e) => return format!("err: {}", clean(e.to_string())),
        Ok(f) => f,
    };
    let mut out = String::from("ok");
    let secs = f.section_table();
    let _ = write!(out, " sec={}", secs.iter().count());
    let imports = (|| -> object::read::Result<(usize, usize)> {
        let (mut n, mut ord) = (0, 0);
        if let Some(t) = f.import_table()? {
            let mut descs = t.descriptors()?;
            while let Some(d) = descs.next()? {
                t.name(d.name.get(object::LittleEndian))?;
                let oft = d.original_first_thunk.get(object::LittleEndian);
                let addr = if oft != 0 { oft } else { d.first_thunk.get(object::LittleEndian) };
                let mut thunks = t.thunks(addr)?;
                while let Some(th) = thunks.next::<Pe>()? {
                    match t.import::<Pe>(th)? {
                        Import::Ordinal(_) => ord += 1,
                        Import::Name(..) => {}
                    }
                    n += 1;
                }
            }
        }
        Ok((n, ord))
    })();
    match imports {
        Ok((n, o)) => { let _ = write!(out, " imp={} ord={}", n, o); }
        Err(e) => { let _ = write!(out, " imp=E:{}", clean(e.to_string())); }
    }
    match f.export_table().and_then(|t| t.map(|t| t.exports()).transpose()) {
        Ok(v) => { let _ = write!(out, " exp={}", v.map(|v| v.len()).unwrap_or(0)); }
        Err(e) => { let _ = write!(out, " exp=E:{}", clean(e.to_string())); }
    }
    let _ = write!(out, " rich={}", f.rich_header_info().map(|r| r.unmasked_entries().count()).unwrap_or(0));
    let dds = f.data_directories();
    let _ = write!(out, " dd={}", dds.len());
    match dds.relocation_blocks(data, &secs) {
        Ok(Some(mut blocks)) => {
            let mut n = 0;
            loop {
                match blocks.next() {
                    Ok(Some(_)) => n += 1,
                    Ok(None) => { let _ = write!(out, " rel={}", n); break; }
                    Err(e) => { let _ = write!(out, " rel=E:{}", clean(e.to_string())); break; }
                }
            }
        }
        Ok(None) => { let _ = write!(out, " rel=0"); }
        Err(e) => { let _ = write!(out, " rel=E:{}", clean(e.to_string())); }
    }
    out
}

fn object_pe_cell(data: &[u8]) -> String {
    match object::FileKind::parse(data) {
        Ok(object::FileKind::Pe32) => object_pe::<object::pe::ImageNtHeaders32>(data),
        Ok(object::FileKind::Pe64) => object_pe::<object::pe::ImageNtHeaders64>(data),
        Ok(k) => format!("err: kind {:?}", k),
        Err(e) => format!("err: {}", clean(e.to_string())),
    }
}

macro_rules! pelite_details {
    ($f:expr, $m:ident) => {{
        use pelite::$m::{Pe, imports::Import};
        let f = $f;
        let mut out = String::from("ok");
        let _ = write!(out, " sec={}", f.section_headers().as_slice().len());
        let imports = (|| -> pelite::Result<(usize, usize)> {
            let (mut n, mut ord) = (0, 0);
            for desc in f.imports()? {
                desc.dll_name()?;
                for imp in desc.int()? {
                    if let Import::ByOrdinal { .. } = imp? { ord += 1; }
                    n += 1;
                }
            }
            Ok((n, ord))
        })();
        match imports {
            Ok((n, o)) => { let _ = write!(out, " imp={} ord={}", n, o); }
            Err(pelite::Error::Null) => { let _ = write!(out, " imp=0 ord=0"); }
            Err(e) => { let _ = write!(out, " imp=E:{}", e); }
        }
        match f.exports().and_then(|e| e.by()) {
            Ok(by) => { let _ = write!(out, " exp={}", by.functions().len()); }
            Err(pelite::Error::Null) => { let _ = write!(out, " exp=0"); }
            Err(e) => { let _ = write!(out, " exp=E:{}", e); }
        }
        match f.rich_structure() {
            Ok(r) => { let _ = write!(out, " rich={}", r.records().count()); }
            Err(pelite::Error::BadMagic) => { let _ = write!(out, " rich=0"); } // no Rich header
            Err(e) => { let _ = write!(out, " rich=E:{}", e); }
        }
        let _ = write!(out, " dd={}", f.data_directory().len());
        match f.base_relocs() {
            Ok(r) => { let _ = write!(out, " rel={}", r.iter_blocks().count()); }
            Err(pelite::Error::Null) => { let _ = write!(out, " rel=0"); }
            Err(e) => { let _ = write!(out, " rel=E:{}", e); }
        }
        out
    }};
}

fn pelite_cell(data: &[u8]) -> String {
    match pelite::PeFile::from_bytes(data) {
        Err(e) => format!("err: {}", e),
        Ok(pelite::Wrap::T32(f)) => pelite_details!(f, pe32),
        Ok(pelite::Wrap::T64(f)) => pelite_details!(f, pe64),
    }
}

fn main() {
    for path in std::env::args().skip(1) {
        let data = std::fs::read(&path).unwrap();
        let cells = [
            catch(|| goblin_cell(&data, false)),
            catch(|| goblin_cell(&data, true)),
            catch(|| object_file_cell(&data)),
            catch(|| object_pe_cell(&data)),
            catch(|| pelite_cell(&data)),
        ];
        println!("{}\t{}", path, cells.join("\t"));
    }
}

fn catch(f: impl FnOnce() -> String + std::panic::UnwindSafe) -> String {
    std::panic::catch_unwind(f).unwrap_or_else(|_| "PANIC".to_string())
}
